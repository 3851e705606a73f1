"""Cost per case against history size, for every read that could grow with history (issue 29).

    .venv/bin/python bench/growth.py                              # 10^3, 10^4, 10^5 rows
    .venv/bin/python bench/growth.py --sizes 1000,10000,100000,1000000
    .venv/bin/python bench/growth.py --write-readme               # table into bench/README.md,
                                                                  # plot into bench/growth.png

Needs PostgreSQL on 127.0.0.1:5432 (user postgres). It drops and re-creates its own database
(casework_growth_bench, or GROWTH_BENCH_DB), migrates it, and grows each path's history by bulk
inserts up to each size in turn; at each size it times R cases (--repeats) through the same
selectors the app calls:

- fraud look-alikes: `similar_decided` for a new alert, history = decided fraud alerts;
- timeline page: `timeline_page` of a case, history = that case's audit entries (runs of 6
  entries and a person's comment); timeline poll: `timeline_has_news` after the newest;
- support candidates: `active_ticket_ids` of a customer, history = that customer's active tickets;
- transaction similarity: `nearest` for a new investigation, history = completed investigations;
- dashboard: `dashboard_figures` at the real now, history = cases at 1,000 a month (in the last
  30 days a tenth open, the rest decided; before them as many months of decided cases as the
  size needs), every fifth decided case with an agent run of three calls; in its own
  database (`<GROWTH_BENCH_DB>_dashboard`), as the other paths' histories are all created now
  and would otherwise fill its 30-day window.

Cost per case, two measures, each the median over the cases timed (a shared machine's bursts
move a few cases, not the median): this process's CPU milliseconds (time.process_time: what a
worker or web process spends) and the wall milliseconds (this process and the database server
together: what a person waits for). At least --repeats cases per path and size, more while they
fit in --budget seconds (cheap paths: up to --most). The growth factor, on each measure, is the
cost at --target over the cost at the smallest size. Sizes not measured (10^6 by default) are
extrapolated with a straight line in log10(size) through the measured points, and marked so.
The 1-minute load average is printed with each figure and its range goes into the table's
heading.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BENCH = Path(__file__).resolve().parent
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
BATCH = 5000


def setup(db: str) -> None:
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}"')
        conn.execute(f'CREATE DATABASE "{db}"')
    var = tempfile.mkdtemp(prefix="growth_bench_")
    os.environ.update({"DEBUG": "true", "SECRET_KEY": "bench", "VAR_DIR": var, "LLM_PROVIDER": "offline",
                       "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db}",
                       "AUDIT_SEQUENCER": "inline", "DJANGO_SETTINGS_MODULE": "casework.settings"})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _cases(prefix: str, case_type: str, start: int, stop: int, **fields):
    from casework.cases.models import Case

    return Case.objects.bulk_create([Case(reference=f"{prefix}{i:08d}", case_type=case_type, title="bench", **fields)
                                     for i in range(start, stop)])


# --- fraud look-alikes -------------------------------------------------------------------

class Fraud:
    name = "fraud look-alikes"
    OUTCOMES = ("confirmed_fraud", "confirmed_fraud", "legit", "legit", "false_positive")

    def __init__(self, rng: random.Random):
        from casework.fraud.demo_data import demo_alerts
        from casework.fraud.features import FEATURES
        from casework.fraud.models import Account, Alert

        self.rng = rng
        self.rows = [a.row for seed in range(40) for a in demo_alerts(seed=seed)]
        self.money = {f.name for f in FEATURES if f.log and not f.integer}
        self.account = Account.objects.create(account_id="BENCH-FRAUD")
        self.size = 0
        # The probes stand for a new alert with its case, which a person linked to a few decided
        # ones (casework.entities): the linked look-alikes are read as the pipeline reads them.
        (self.probe_case,) = _cases("FRP-", "fraud_alert", 0, 1)
        self.probes = [Alert(account=self.account, case_id=self.probe_case.pk, **self._features(a.row))
                       for a in demo_alerts(seed=999)]

    def _features(self, row: dict) -> dict:
        from casework.fraud.features import FEATURE_NAMES

        return {n: round(row[n] * self.rng.uniform(0.85, 1.2), 2) if n in self.money else row[n]
                for n in FEATURE_NAMES}

    def grow(self, size: int) -> None:
        from casework.cases.models import Decision
        from casework.fraud.models import Alert, DecidedVector
        from casework.fraud.similarity import decided_vector_row

        for start in range(self.size, size, BATCH):
            cases = _cases("FRB-", "fraud_alert", start, min(size, start + BATCH), status="closed", closed_at=NOW)
            alerts = Alert.objects.bulk_create([
                Alert(case=case, account=self.account, fraud_probability=0.5, anomaly_score=0.5, risk_level="medium",
                      score_source="casework_scorer",
                      **self._features(self.rng.choice(self.rows))) for case in cases])
            decisions = Decision.objects.bulk_create([
                Decision(case=case, outcome=self.rng.choice(self.OUTCOMES), reason="bench", final=True)
                for case in cases])
            DecidedVector.objects.bulk_create([
                decided_vector_row(d, (c.reference, "BENCH-FRAUD", *[getattr(a, n) for n in _names()]))
                for d, c, a in zip(decisions, cases, alerts, strict=True)])
            if start == 0:
                _link(self.probe_case, cases[:LINKED])
        self.size = size

    def case(self, i: int):
        from casework.fraud.similarity import similar_decided

        return similar_decided(self.probes[i % len(self.probes)])


LINKED = 3  # decided cases a person linked to each probe's case


def _link(case, others) -> None:
    from casework.entities.models import CaseLink

    CaseLink.objects.bulk_create([CaseLink(from_case=case, to_case=other, kind="related", reason="bench")
                                  for other in others])


def _names():
    from casework.fraud.features import FEATURE_NAMES

    return FEATURE_NAMES


# --- the case timeline -------------------------------------------------------------------

class Timeline:
    name = "timeline page"

    def __init__(self, rng: random.Random):
        (self.the_case,) = _cases("TLB-", "fraud_alert", 0, 1)
        self.size = 0

    def _entries(self, start: int, stop: int):
        from audit.models import AuditEntry

        out = []
        for i in range(start, stop):
            run, step = divmod(i, 7)
            when = NOW - timedelta(days=365) + timedelta(seconds=i)
            base = dict(timestamp=when, case_id=self.the_case.pk, case_ref=self.the_case.reference,
                        correlation_id=f"run-{run}")
            if step == 0:
                out.append(AuditEntry(actor="alice", actor_type="user", action="agent.run_queued",
                                      object_type="agents.agentrun", object_id=str(run),
                                      data={"pipeline": "fraud", "mode": "rerun_all"}, **base))
            elif step in (1, 2, 3):
                out.append(AuditEntry(actor="agent:geo", actor_type="agent", action="agent.call_completed",
                                      object_type="agents.agentcall", object_id=f"{run}-{step}",
                                      data={"run": run, "key": "geo", "latency_ms": 200}, **base))
            elif step == 4:
                out.append(AuditEntry(actor="agent:geo", actor_type="agent", action="agent.tool_called",
                                      object_type="agents.agentcall", object_id=f"{run}-1",
                                      data={"tool": "ip_lookup", "success": True}, **base))
            elif step == 5:
                out.append(AuditEntry(actor="system", actor_type="system", action="agent.run_completed",
                                      object_type="agents.agentrun", object_id=str(run),
                                      data={"pipeline": "fraud", "mode": "rerun_all"}, **base))
            else:
                out.append(AuditEntry(actor="alice", actor_type="user", action="case.commented",
                                      object_type="cases.comment", object_id=str(run),
                                      data={"body": f"Note {run}."}, **base))
        return out

    def grow(self, size: int) -> None:
        from audit.models import AuditEntry

        for start in range(self.size, size, BATCH):
            AuditEntry.objects.bulk_create(self._entries(start, min(size, start + BATCH)))
        self.size = size

    def case(self, i: int):
        from casework.cases.timeline import timeline_page

        return timeline_page(self.the_case, show=("all", "agents", "people")[i % 3])


class TimelinePoll(Timeline):
    name = "timeline poll"

    def __init__(self, timeline: Timeline):
        self.the_case = timeline.the_case
        self.timeline = timeline

    def grow(self, size: int) -> None:
        from audit.models import AuditEntry

        self.newest = AuditEntry.objects.filter(case_id=self.the_case.pk).latest("id").pk

    def case(self, i: int):
        from casework.cases.timeline import timeline_has_news

        return timeline_has_news(self.the_case, after=self.newest)


# --- support candidates ------------------------------------------------------------------

class Support:
    name = "support candidates"

    def __init__(self, rng: random.Random):
        from casework.support.models import Customer

        self.customer = Customer.objects.create(customer_id="BENCH-CUSTOMER", plan="pro")
        self.size = 0

    def grow(self, size: int) -> None:
        from casework.support.models import Ticket

        for start in range(self.size, size, BATCH):
            cases = _cases("SPB-", "support_ticket", start, min(size, start + BATCH))
            Ticket.objects.bulk_create([Ticket(case=case, ticket_id=f"TKT-{case.pk:08X}", customer=self.customer,
                                               lifecycle=("received", "routed", "triage_failed")[case.pk % 3])
                                        for case in cases])
        self.size = size

    def case(self, i: int):
        from casework.support.selectors import active_ticket_ids

        return active_ticket_ids(self.customer.customer_id)


# --- transaction similarity --------------------------------------------------------------

class Transactions:
    name = "transaction similarity"

    def __init__(self, rng: random.Random):
        from casework.transactions.models import CardAccount, Transaction

        self.rng = rng
        account = CardAccount.objects.create(account_id="BENCH", home_country="NL")
        self.txn = Transaction.objects.create(transaction_id="TX-BENCH", account=account, card_last4="0000",
                                              amount=10, currency="EUR", merchant="Bench", mcc="5411",
                                              country="NL", channel="pos", occurred_at=NOW)
        self.size = 0
        self.probes = [self._vector() for _ in range(100)]
        # The asking investigation (similarity_tool passes it as exclude_pk), on a transaction of
        # its own, linked by a person to a few decided ones (casework.entities).
        from casework.transactions.models import Investigation

        probe_txn = Transaction.objects.create(transaction_id="TX-BENCH-PROBE", account=account, card_last4="0000",
                                               amount=10, currency="EUR", merchant="Bench", mcc="5411",
                                               country="NL", channel="pos", occurred_at=NOW)
        (probe_case,) = _cases("TXP-", "transaction_investigation", 0, 1)
        self.asking = Investigation.objects.create(case=probe_case, transaction=probe_txn, status="IN_PROGRESS")

    def _vector(self) -> list[float]:
        scores = [round(self.rng.random() ** 2, 3) for _ in range(4)]
        return scores + [1.0 if self.rng.random() < p else 0.0 for p in (0.3, 0.35, 0.2, 0.15, 0.1)]

    def grow(self, size: int) -> None:
        from casework.transactions import similarity
        from casework.transactions.models import Investigation

        for start in range(self.size, size, BATCH):
            cases = _cases("TXB-", "transaction_investigation", start, min(size, start + BATCH))
            rows = []
            for case in cases:
                v = self._vector()
                rows.append(Investigation(case=case, transaction=self.txn, status="COMPLETED", severity="LOW",
                                          features=v, feature_bucket=similarity.bucket_of(v)))
            Investigation.objects.bulk_create(rows)
            if start == 0:
                from casework.cases.models import Decision

                Decision.objects.bulk_create([Decision(case=c, outcome="fraud", reason="bench", final=True)
                                              for c in cases[:LINKED]])
                _link(self.asking.case, cases[:LINKED])
        self.size = size

    def case(self, i: int):
        from casework.transactions.similarity import nearest

        return nearest(self.probes[i % len(self.probes)], exclude_pk=self.asking.pk)


# --- dashboard ---------------------------------------------------------------------------

PER_MONTH = 1000  # the dashboard history's cases a month


class Dashboard:
    """History = cases at PER_MONTH a month: in the last 30 days a tenth of them open (due a
    day after they were opened) and the rest decided; before that, as many months as the size
    needs, all decided (each 1 to 73 hours after it was opened). The dashboard reads 30 days,
    so a longer past must not cost it more (a busier month would, rightly). Every fifth decided
    case had an agent run of three calls. Loaded in bulk. Timed at the real now (the window is
    the last 30 days of the wall clock, whenever the bench runs)."""

    name = "dashboard"

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.size = 0

    def grow(self, size: int) -> None:
        from django.db import connection
        from django.utils import timezone

        from agents.models import AgentRun
        from casework.cases.models import Case, Decision

        now = timezone.now()
        for start in range(self.size, size, BATCH):
            stop = min(size, start + BATCH)
            opened = Case.objects.bulk_create([
                Case(reference=f"DBO-{i:08d}", case_type="fraud_alert", title="bench") for i in range(start, stop)
                if i < PER_MONTH and i % 10 == 0])
            done = Case.objects.bulk_create([
                Case(reference=f"DBC-{i:08d}", case_type="fraud_alert", title="bench", status="closed",
                     closed_at=now - timedelta(days=self._days_ago(i))) for i in range(start, stop)
                if i >= PER_MONTH or i % 10])
            Decision.objects.bulk_create([
                Decision(case=c, outcome="legit", reason="bench", final=True) for c in done])
            # created_at and decided_at are set on insert (auto_now_add): backdate them as the
            # history would have them, in one statement per table.
            with connection.cursor() as cursor:
                cursor.execute("UPDATE cases_case SET created_at = %s - random() * interval '30 days' "
                               "WHERE id = ANY(%s)", [now, [c.pk for c in opened]])
                cursor.execute("UPDATE cases_case SET due_at = created_at + interval '1 day' WHERE id = ANY(%s)",
                               [[c.pk for c in opened]])
                cursor.execute("UPDATE cases_case SET created_at = closed_at - interval '1 hour' "
                               "- random() * interval '72 hours' WHERE id = ANY(%s)", [[c.pk for c in done]])
                cursor.execute("UPDATE cases_decision d SET decided_at = c.closed_at FROM cases_case c "
                               "WHERE c.id = d.case_id AND c.id = ANY(%s)", [[c.pk for c in done]])
            # Every fifth decided case had an agent run of three calls (one failed in seven),
            # made when it was opened: the agent calls panel reads the window's calls by their
            # created_at index, so the calls of the past year must be there to be skipped.
            runs = AgentRun.objects.bulk_create([
                AgentRun(case=c, pipeline="fraud", status="completed") for c in done if c.pk % 5 == 0])
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO agents_agentcall (run_id, kind, key, name, stage, input, output, status, error,"
                    " error_type, attempts, attempt_log, input_tokens, output_tokens, latency_ms, cost_usd, model,"
                    " provider, trace_id, span_id, created_at)"
                    " SELECT r.id, 'agent', 'a' || n, 'agent' || n, '', '{}', '{}',"
                    " CASE WHEN (r.id + n) %% 7 = 0 THEN 'error' ELSE 'ok' END, '', '', 1, '[]', 900, 120, 200,"
                    " 0.0012, 'bench', 'offline', '', '', c.created_at"
                    " FROM agents_agentrun r JOIN cases_case c ON c.id = r.case_id, generate_series(1, 3) n"
                    " WHERE r.id = ANY(%s)", [[r.pk for r in runs]])
        self.size = size

    def _days_ago(self, i: int) -> float:
        """When the i-th case was decided: the first PER_MONTH within the dashboard's 30 days,
        the rest a month's worth further back each (a team deciding PER_MONTH cases a month,
        with as long a past as the size needs)."""
        if i < PER_MONTH:
            return self.rng.uniform(0, 30)
        return 30 + 30 * (i - PER_MONTH) / PER_MONTH + self.rng.uniform(0, 1)

    def case(self, i: int):
        from casework.cases.dashboard.selectors import dashboard_figures

        return dashboard_figures(user=None)  # every case: the figures at this size, for no one person


# --- measuring ---------------------------------------------------------------------------

def measure(path, repeats: int, budget: float, most: int) -> dict:
    """Each case timed on its own; the medians, so that a neighbour's burst on a shared machine
    moves a few cases, not the figure. At least `repeats` cases, more while the path's cases
    fit in `budget` seconds (cheap paths: up to `most`)."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    for i in range(3):  # warm caches, connections, imports
        path.case(i)
    cpu, wall, queries = [], [], []
    started = time.perf_counter()
    while len(cpu) < repeats or (len(cpu) < most and time.perf_counter() - started < budget):
        i = len(cpu)
        reset_queries()  # the log keeps 9,000 queries: past that, a capture would count none
        with CaptureQueriesContext(connection) as captured:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            path.case(i)
            cpu.append((time.process_time() - cpu0) * 1000)
            wall.append((time.perf_counter() - wall0) * 1000)
        queries.append(len(captured))
    return {"cpu_ms": statistics.median(cpu), "wall_ms": statistics.median(wall),
            "queries": statistics.median(queries), "cases": len(cpu)}


def extrapolate(points: dict[int, float], size: int) -> float:
    """A straight line in log10(size) through the measured points (least squares); a cost that
    fell as history grew is held at its last measured value rather than extrapolated lower."""
    xs = [math.log10(s) for s in points]
    ys = list(points.values())
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / (sum((x - mx) ** 2 for x in xs) or 1)
    if slope <= 0:
        return ys[-1]
    return my + slope * (math.log10(size) - mx)


METRICS = (("cpu_ms", "CPU ms of this process"), ("wall_ms", "wall ms (this process and the database together)"))


def _row(by_size: dict, sizes: list[int], target: int, metric: str, extra: bool) -> tuple[list[str], float]:
    values = {s: by_size[s][metric] for s in sizes}
    last = extrapolate(values, target) if extra else values[target]
    cells = [f"{values[s]:.2f}" for s in sizes] + ([f"{last:.2f}"] if extra else [])
    return cells, last / values[sizes[0]]


def report(results: dict, sizes: list[int], target: int, machine: str) -> str:
    extra = target not in sizes
    head = [f"{s:,}" for s in sizes] + ([f"{target:,} (extrapolated)"] if extra else [])
    lines = [machine, "",
             "Cost per case: the median over the cases timed (how many: in brackets after the queries). "
             f"Growth: the cost at {target:,}{' (extrapolated)' if extra else ''} over the cost at {sizes[0]:,}, "
             "on each measure. The dashboard is judged on wall time (most of its cost is the database's).", ""]
    lines += ["| path | queries (cases timed) | " + " | ".join(head) + " | CPU growth | wall growth |",
              "|---|---|" + "---|" * (len(head) + 2)]
    for name, by_size in results.items():
        counts = ", ".join(f"{by_size[s]['queries']:.0f} ({by_size[s]['cases']})" for s in sizes)
        cpu, cpu_growth = _row(by_size, sizes, target, "cpu_ms", extra)
        wall, wall_growth = _row(by_size, sizes, target, "wall_ms", extra)
        cells = [f"{c} / {w}" for c, w in zip(cpu, wall, strict=True)]
        lines.append(f"| {name} | {counts} | " + " | ".join(cells) + f" | {cpu_growth:.2f} | {wall_growth:.2f} |")
    lines += ["", "Cells: CPU ms / wall ms per case."]
    return "\n".join(lines)


def plot(results: dict, sizes: list[int], target: int, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharex=True)
    for ax, (metric, label) in zip(axes, METRICS, strict=True):
        for name, by_size in results.items():
            values = {s: by_size[s][metric] for s in sizes}
            line = ax.plot(sizes, [values[s] for s in sizes], marker="o", label=name)[0]
            if target not in sizes:
                ax.plot([sizes[-1], target], [values[sizes[-1]], extrapolate(values, target)], linestyle=":",
                        color=line.get_color())
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows of history")
        ax.set_ylabel(label.split(" (")[0] + " per case (median)")
        ax.set_title(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle("Cost per case against history (dotted: extrapolated)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def _dashboard_apart(args, db: str) -> dict:
    """bench/growth.py --paths dashboard in the database `db`_dashboard: its figures and loads."""
    import subprocess

    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([sys.executable, __file__, "--paths", "dashboard", "--sizes", args.sizes,
                        "--repeats", str(args.repeats), "--budget", str(args.budget), "--most", str(args.most),
                        "--seed", str(args.seed), "--json", out.name],
                       env={**os.environ, "GROWTH_BENCH_DB": f"{db}_dashboard"}, check=True)
        return json.loads(Path(out.name).read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--target", type=int, default=1_000_000, help="the size the growth factor is read at")
    parser.add_argument("--repeats", type=int, default=30, help="at least this many cases per path and size")
    parser.add_argument("--budget", type=float, default=2.0,
                        help="seconds per path and size: more cases while they fit (cheap paths)")
    parser.add_argument("--most", type=int, default=300, help="at most this many cases per path and size")
    parser.add_argument("--paths", default="fraud,timeline,support,transactions,dashboard")
    parser.add_argument("--write-readme", action="store_true")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--json", help="write the figures to this file (the dashboard's own run)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    db = os.environ.get("GROWTH_BENCH_DB", "casework_growth_bench")
    wanted = set(args.paths.split(","))
    apart = None
    if "dashboard" in wanted and len(wanted) > 1:
        # The dashboard reads the last 30 days of every case; the other paths' histories are
        # all created now, so in one database they would be its window. It runs in its own
        # database, with only its own history (1,000 cases a month), before the others.
        wanted.discard("dashboard")
        apart = _dashboard_apart(args, db)
    setup(db)
    rng = random.Random(args.seed)
    paths = []
    if "fraud" in wanted:
        paths.append(Fraud(rng))
    if "timeline" in wanted:
        timeline = Timeline(rng)
        paths += [timeline, TimelinePoll(timeline)]
    if "support" in wanted:
        paths.append(Support(rng))
    if "transactions" in wanted:
        paths.append(Transactions(rng))
    if "dashboard" in wanted:
        paths.append(Dashboard(rng))
    from django.db import connection

    results: dict[str, dict[int, dict]] = {p.name: {} for p in paths}
    loads = [os.getloadavg()[0]]
    for size in sizes:
        for path in paths:
            started = time.perf_counter()
            path.grow(size)
            with connection.cursor() as cursor:
                # As autovacuum would have by then: the bulk loads' UPDATEs leave dead index
                # entries at the end of created_at's index, and the planner's probe of that end
                # (get_actual_variable_range) then cost the dashboard 46 ms of planning at 10^6.
                cursor.execute("VACUUM ANALYZE")
            loaded = time.perf_counter() - started
            results[path.name][size] = figures = measure(path, args.repeats, args.budget, args.most)
            print(f"{path.name:24} {size:>9,}  cpu {figures['cpu_ms']:7.2f} ms  wall {figures['wall_ms']:7.2f} ms  "
                  f"queries {figures['queries']:5.1f}  cases {figures['cases']:4}  (grown in {loaded:.0f} s, "
                  f"load {os.getloadavg()[0]:.1f})", flush=True)
            loads.append(os.getloadavg()[0])
    if apart is not None:
        results["dashboard"] = {int(size): figures for size, figures in apart["results"]["dashboard"].items()}
        loads += apart["loads"]
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "loads": loads}))
    import platform

    import django

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = cursor.fetchone()[0].split()[0]
    machine = (f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, PostgreSQL {pg}, "
               f"Django {django.get_version()}; run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; "
               f"{args.repeats} to {args.most} cases per size and path (as many as fit in {args.budget:g} s), "
               f"after 3 warm-up cases; 1-minute load average {min(loads):.1f} to {max(loads):.1f} "
               f"({'a quiet' if max(loads) < 1.5 else 'a shared, loaded'} machine).")
    table = report(results, sizes, args.target, machine)
    print(table)
    if args.write_readme:
        from readme_block import write_block

        plot(results, sizes, args.target, BENCH / "growth.png")
        write_block("growth", table + "\n\n![Cost per case against history size](growth.png)")


if __name__ == "__main__":
    main()
