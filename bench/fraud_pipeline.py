"""Fraud pipeline benchmark (issue 4). Run by hand:

    .venv/bin/python bench/fraud_pipeline.py [--alerts 500] [--trials drain:threads:4,live:prefork:4]
        [--profile DIR] [--write-readme]

Needs PostgreSQL on 127.0.0.1:5432 (user postgres) and Redis on 127.0.0.1:6379. It creates
its own database, FRAUD_BENCH_DB (casework_fraud_bench, dropped and re-created), and uses
Redis database 12 (flushed).

(a) One alert against the fake OpenAI-compatible server (tests/fakes/llm_servers.py) at a
    fixed latency per call (200 ms): the wall time of the alert_creation run, i.e. the five
    specialists concurrently then the orchestrator (about two latencies), beside the seed's
    sequential design, the same six calls one after another (about six latencies). Both go
    through the same executor (AgentCall rows, audit entries, traces); the fake answers
    each agent with what its offline analyst says about the data in the request. Median
    of --repeats alerts.
(b) --alerts alerts through a real Celery worker (`celery -A casework worker --pool=threads
    --concurrency=N`, or --pool=prefork, a subprocess) on PostgreSQL + Redis with the offline
    provider, one trial per --trials entry (mode:pool:N):
    - drain: the alerts are created (alert_create, varied realistic features) while no
      worker runs, so their tasks wait in Redis; then the worker starts, and the time from
      the first run's start to the last run's end gives alerts per second;
    - live: the worker runs while the alerts are created (one creator thread), timed from
      the first alert to the last run's end.
    Each trial starts from the same database: migrated, with a history of 50 demo alerts
    (10 decided, their knowledge patterns captured) so outcome_similarity has cases to
    compare with. Audit writes per second and the audit chain's integrity are checked after
    every trial. --profile DIR samples each threads worker with py-spy (pip install py-spy;
    PY_SPY names the binary if it is not on PATH) and reports where its time goes.

--write-readme replaces the figures between the fraud_pipeline markers in bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from readme_block import README, write_block  # bench/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parents[1]
PG = os.environ.get("FRAUD_BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DB = os.environ.get("FRAUD_BENCH_DB", "casework_fraud_bench")
TEMPLATE_DB = f"{DB}_template"
BROKER = os.environ.get("FRAUD_BENCH_BROKER", "redis://127.0.0.1:6379/12")
PY_SPY = os.environ.get("PY_SPY", "py-spy")
DEFAULT_TRIALS = ("drain:threads:1,drain:threads:4,drain:threads:16,drain:threads:32,drain:prefork:2,"
                  "drain:prefork:4,live:threads:16,live:prefork:4")
HISTORY_SEED, ALERT_SEED = 4_000, 7_321

log = logging.getLogger("bench")


# --- PostgreSQL databases (outside Django) -------------------------------------------------


def pg_admin(*statements: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        for sql in statements:
            conn.execute(sql)


def recreate_db(name: str, template: str | None = None) -> None:
    from django.db import connections

    connections.close_all()
    pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
             f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))


def pg_version() -> str:
    import psycopg

    with psycopg.connect(f"{PG}/postgres") as conn:
        return conn.execute("SHOW server_version").fetchone()[0]


def flush_broker() -> None:
    import redis

    redis.Redis.from_url(BROKER).flushdb()


# --- Django --------------------------------------------------------------------------------


def setup_django(var_dir: str) -> None:
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret", "FIELD_ENCRYPTION_KEYS": "YmVuY2gtb25seS1maWVsZC1rZXktbm90LWZvci1wcm8=", "VAR_DIR": var_dir,
        "DATABASE_URL": f"{PG}/{DB}", "CELERY_BROKER_URL": BROKER, "LLM_PROVIDER": "offline", "DEBUG": "false",
    })
    for name in ("CELERY_TASK_ALWAYS_EAGER", "PROMETHEUS_MULTIPROC_DIR", "OTEL_EXPORTER_OTLP_ENDPOINT",
                 "GOOGLE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    for name in ("httpx2", "httpx", "openai", "agents", "audit", "celery", "casework"):
        logging.getLogger(name).setLevel(logging.WARNING)


class no_delivery:  # noqa: N801 - used as a context manager
    """Runs are queued in the database but no task is sent: the caller executes them."""

    def __enter__(self):
        from agents.tasks import run_pipeline

        self._task, self._delay = run_pipeline, run_pipeline.delay
        run_pipeline.delay = lambda *a, **kw: None
        return self

    def __exit__(self, *exc):
        self._task.delay = self._delay


class eager:  # noqa: N801
    """Tasks run in-process when they are sent (for the history)."""

    def __enter__(self):
        from casework.celery import app

        self._was = app.conf.task_always_eager
        app.conf.task_always_eager = True

    def __exit__(self, *exc):
        from casework.celery import app

        app.conf.task_always_eager = self._was


def prepare_template() -> dict:
    """Fresh database, migrated, with a decided history; then copied as the trials' template."""
    from django.core.management import call_command

    recreate_db(DB)
    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    migrate_s = time.perf_counter() - started

    from casework.cases.services import case_close
    from casework.fraud.demo_data import demo_alerts
    from casework.fraud.services import alert_create, pattern_capture
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create

    user = user_create(actor="system", username="bench", password="bench-pass-123", role=INVESTIGATOR)
    decided = 0
    with eager():
        for demo in demo_alerts(HISTORY_SEED):
            alert = alert_create(actor=user, data={**demo.row, "account_id": f"HIST-{demo.row['account_id']}"},
                                 via="demo")
            if demo.decision:
                outcome, reason, pattern = demo.decision
                decision = case_close(actor=user, case=alert.case, outcome=outcome, reason=reason)
                pattern_capture(decision=decision, pattern=pattern, actor="system")
                decided += 1
    recreate_db(TEMPLATE_DB, template=DB)
    return {"migrate_s": migrate_s, "history": len(demo_alerts(HISTORY_SEED)), "decided": decided}


# --- Alerts --------------------------------------------------------------------------------


def generate_alerts(n: int, seed: int = ALERT_SEED) -> list[dict]:
    """Varied, realistic alerts: the demo's archetypes (4 kinds of fraud, 5 hard negatives,
    ordinary accounts) in the demo's proportions; a quarter carry upstream scores."""
    from casework.fraud.demo_data import ARCHETYPES, FRAUD_ARCHETYPES

    rng = random.Random(seed)
    names = list(ARCHETYPES)
    weights = [ARCHETYPES[name][1] for name in names]
    alerts = []
    for i in range(n):
        archetype = rng.choices(names, weights)[0]
        row = ARCHETYPES[archetype][0](rng, f"BENCH-{seed}-{i:05d}")
        if rng.random() < 0.25:
            fraud = archetype in FRAUD_ARCHETYPES
            row["fraud_probability"] = round(rng.uniform(0.55, 0.97) if fraud else rng.uniform(0.05, 0.6), 3)
            row["one_line_explanation"] = f"Upstream model: {archetype.replace('_', ' ')} signals."
        alerts.append(row)
    return alerts


def create_alerts(rows: list[dict], actor) -> tuple[float, list[int]]:
    from casework.fraud.services import alert_create

    started = time.perf_counter()
    case_ids = [alert_create(actor=actor, data=row, via="api").case_id for row in rows]
    return time.perf_counter() - started, case_ids


# --- (a) one alert against the fake LLM server ------------------------------------------------


def offline_answering_fake(latency_s: float):
    """The fake endpoint, answering each fraud agent (told by its system prompt) with what
    that agent's offline analyst concludes from the data fenced in the request."""
    from agents.llm.offline_registry import OFFLINE_ANALYSTS
    from casework.fraud.agents import PROMPTS
    from tests.fakes.llm_servers import FakeOpenAIServer, json_answer

    def answer(body: dict):
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        agent_id = next(a for a, prompt in PROMPTS.items() if system.startswith(prompt))
        data = json.loads("\n".join(user.split("\n")[1:-1]))
        return json_answer(OFFLINE_ANALYSTS[agent_id](data))

    server = FakeOpenAIServer(latency=latency_s)
    server.handler = answer
    return server.start()


def register_sequential_fraud():
    """The seed's design: the same six calls one after another (one stage per agent)."""
    from agents.runtime.pipeline import PIPELINES, Pipeline, Stage, register_pipeline
    from casework.fraud.agents import SPECIALISTS
    from casework.fraud.agents.pipeline import fraud_pipeline

    if "fraud_sequential" in PIPELINES:
        return
    specialists, orchestrator = fraud_pipeline.modes["alert_creation"]

    specs: dict[int, list] = {}  # run id -> the specialists' calls, computed once per run as in the fan-out

    def only(key):
        def calls(ctx):
            if ctx.run.pk not in specs:
                specs[ctx.run.pk] = specialists.calls(ctx)
            return [spec for spec in specs[ctx.run.pk] if spec.key == key]
        return calls

    register_pipeline(Pipeline(
        name="fraud_sequential", modes={"alert_creation": [*(Stage(k, only(k)) for k in SPECIALISTS), orchestrator]},
        prepare=fraud_pipeline.prepare, finish=fraud_pipeline.finish, agents=fraud_pipeline.agents,
    ))


def single_alert(latency_ms: float, repeats: int) -> dict:
    from django.db import transaction
    from django.test import override_settings

    from agents.llm.registry import reset_provider
    from agents.models import AgentRun
    from agents.runtime.pipeline import execute_run
    from agents.tasks import pipeline_enqueue
    from casework.fraud.services import alert_create

    register_sequential_fraud()
    server = offline_answering_fake(latency_ms / 1000)
    walls: dict[str, list[float]] = {"parallel": [], "sequential": []}
    try:
        with override_settings(LLM_PROVIDER="openai", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="bench",
                               LLM_MODEL="fake-model", LLM_TIMEOUT_SECONDS=30), no_delivery():
            reset_provider()
            rows = generate_alerts(repeats + 1, seed=ALERT_SEED + 1)
            for i, row in enumerate(rows):
                alert = alert_create(actor="system", data=row)
                parallel = AgentRun.objects.get(case=alert.case, pipeline="fraud")
                with transaction.atomic():
                    sequential = pipeline_enqueue(case=alert.case, pipeline="fraud_sequential", mode="alert_creation")
                order = [("parallel", parallel.pk), ("sequential", sequential.pk)]
                if i % 2:
                    order.reverse()  # neither always goes first
                for name, run_id in order:
                    before = server.request_count
                    started = time.perf_counter()
                    run = execute_run(run_id)
                    wall = time.perf_counter() - started
                    assert run.status == AgentRun.Status.COMPLETED, (run.status, run.error)
                    assert server.request_count - before == 6, server.request_count - before
                    if i:  # the first alert warms up imports, connections and the client
                        walls[name].append(wall)
    finally:
        server.stop()
        reset_provider()
    return walls


# --- (b) many alerts through a real Celery worker -------------------------------------------------


class Worker:
    def __init__(self, concurrency: int, var_dir: str, pool: str = "threads"):
        env = {**os.environ, "DATABASE_URL": f"{PG}/{DB}", "CELERY_BROKER_URL": BROKER, "LLM_PROVIDER": "offline",
               "VAR_DIR": var_dir, "PYTHONUNBUFFERED": "1"}
        env.pop("CELERY_TASK_ALWAYS_EAGER", None)
        self.log_path = Path(var_dir) / f"worker-{concurrency}.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "celery"), "-A", "casework", "worker", f"--pool={pool}",
             f"--concurrency={concurrency}", "--loglevel=WARNING", "--without-gossip", "--without-mingle",
             "--without-heartbeat", "-n", f"fraud-bench-{concurrency}@%h"],
            cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def profile(self, output: Path) -> None:
        """Sample the worker with py-spy (on-CPU stacks, collapsed) until it stops."""
        self._spy = subprocess.Popen(
            [PY_SPY, "record", "--pid", str(self.proc.pid), "--rate", "50", "--format", "raw", "--nonblocking",
             "--output", str(output)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        spy = getattr(self, "_spy", None)
        if spy is not None and spy.poll() is None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on Ctrl-C
            try:
                spy.wait(timeout=30)
            except subprocess.TimeoutExpired:
                spy.kill()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # warm shutdown: finishes what it holds
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def wait_for_runs(case_ids: list[int], worker: Worker, timeout: float, stall: float = 60) -> None:
    """Until every run of these cases has ended; fails on a timeout, a dead worker, or no
    run ending for `stall` seconds (e.g. every task failing before it could claim its run)."""
    from agents.models import AgentRun

    deadline = time.monotonic() + timeout
    last_left, last_progress = None, time.monotonic()
    while True:
        left = AgentRun.objects.filter(case_id__in=case_ids, pipeline="fraud", status__in=AgentRun.ACTIVE).count()
        if not left:
            return
        now = time.monotonic()
        if left != last_left:
            last_left, last_progress = left, now
        if worker.proc.poll() is not None:
            raise RuntimeError(f"The worker exited ({worker.proc.returncode}):\n{worker.tail()}")
        if now > deadline:
            raise TimeoutError(f"{left} runs still active after {timeout:.0f} s:\n{worker.tail()}")
        if now - last_progress > stall:
            raise RuntimeError(f"No run ended for {stall:.0f} s ({left} active):\n{worker.tail()}")
        time.sleep(0.25)


def trial(mode: str, pool: str, concurrency: int, rows: list[dict], var_dir: str, timeout: float,
          profile_dir: str = "") -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connections
    from django.db.models import Max, Min

    from agents.models import AgentCall, AgentRun
    from audit.models import AuditEntry
    from audit.services import audit_verify_chain

    recreate_db(DB, template=TEMPLATE_DB)
    flush_broker()
    actor = get_user_model().objects.get(username="bench")
    audit_before = AuditEntry.objects.count()
    worker = None
    try:
        if mode == "drain":
            create_s, case_ids = create_alerts(rows, actor)
            worker = Worker(concurrency, var_dir, pool)
            if profile_dir:
                profile = Path(profile_dir) / f"worker-{pool}-{concurrency}.txt"
                worker.profile(profile)
            wait_for_runs(case_ids, worker, timeout)
        else:
            worker = Worker(concurrency, var_dir, pool)
            time.sleep(4)  # let it boot (Django set-up, broker connection) before the clock starts
            started = time.perf_counter()
            create_s, case_ids = create_alerts(rows, actor)
            wait_for_runs(case_ids, worker, timeout)
            live_wall = time.perf_counter() - started
    finally:
        if worker is not None:
            worker.stop()
    runs = AgentRun.objects.filter(case_id__in=case_ids, pipeline="fraud")
    span = runs.aggregate(first=Min("started_at"), last=Max("finished_at"), created=Min("created_at"))
    by_status = {s: runs.filter(status=s).count() for s in AgentRun.Status.values}
    window_s = (span["last"] - span["first"]).total_seconds()
    wall = window_s if mode == "drain" else live_wall
    # Audit writes made by the worker while it ran (the creation's own are counted apart).
    worker_entries = AuditEntry.objects.filter(timestamp__gte=span["first"], timestamp__lte=span["last"])
    if mode == "drain":
        worker_audit = worker_entries.count()
        audit_total = AuditEntry.objects.count() - audit_before
    else:
        audit_total = AuditEntry.objects.count() - audit_before
        worker_audit = audit_total
    checked, broken, why = audit_verify_chain()
    calls = AgentCall.objects.filter(run__in=runs).count()
    per_run = sorted((r.finished_at - r.started_at).total_seconds() for r in runs)
    result = {
        "mode": mode, "pool": pool, "concurrency": concurrency, "alerts": len(rows), "wall_s": wall,
        "alerts_per_s": len(rows) / wall, "create_s": create_s, "create_per_s": len(rows) / create_s,
        "runs": by_status, "calls": calls, "audit_entries": audit_total, "audit_per_s": worker_audit / wall,
        "audit_checked": checked, "audit_ok": broken is None, "audit_why": why,
        "load_avg_1m": os.getloadavg()[0], "run_p50_s": statistics.median(per_run), "run_p95_s": per_run[int(0.95 * (len(per_run) - 1))],
    }
    if mode == "drain" and profile_dir:
        worker_stop_profile = Path(profile_dir) / f"worker-{pool}-{concurrency}.txt"
        if worker_stop_profile.exists():
            result["profile"] = summarise_profile(worker_stop_profile)
    connections.close_all()
    return result


# Where a worker's CPU goes, by the innermost of these frames on each sampled stack.
PROFILE_BUCKETS = (
    ("similar-case search (3 scans per alert)", ("casework/fraud/selectors.py",)),
    ("audit_record (chain lock, last hash, insert)", ("audit/services.py",)),
    ("recording each call (_record: AgentCall, run state)", ("_record (agents/runtime/pipeline.py",)),
    ("agent calls (offline analysts, prompt building, parsing, spans)", ("run_agent (agents/runtime/runner.py",)),
    ("writing results back (priority, pattern)", ("_finish (casework/fraud/agents/pipeline.py",)),
    ("claiming, heartbeats, run saves", ("agents/runtime/pipeline.py",)),
    ("Celery / kombu / Redis", ("celery/", "kombu/", "redis/")),
)


def summarise_profile(path: Path) -> list[tuple[str, float, float]]:
    """(bucket, share of samples, share of those inside Django's ORM + psycopg)."""
    buckets: dict[str, list[int]] = {}
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        name = "other"
        for label, needles in PROFILE_BUCKETS:
            if any(needle in stack for needle in needles):
                name = label
                break
        orm = "django/db/" in stack or "psycopg/" in stack
        entry = buckets.setdefault(name, [0, 0])
        entry[0] += n
        entry[1] += n if orm else 0
    return sorted(((k, v[0] / total, v[1] / v[0] if v[0] else 0) for k, v in buckets.items()),
                  key=lambda item: -item[1]) if total else []


# --- Report --------------------------------------------------------------------------------


def machine() -> dict:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    import celery
    import django

    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(), "postgresql": pg_version(),
            "django": django.get_version(), "celery": celery.__version__,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}


def report(args, results: dict) -> str:
    m, lat = results["machine"], args.latency / 1000
    out = [
        f"Machine: {m['nproc']} CPUs ({m['cpu']}), Python {m['python']}, PostgreSQL {m['postgresql']}, "
        f"Django {m['django']}, Celery {m['celery']}, Redis broker; run {m['date']}.",
        "",
    ]
    if results["single"]:
        out += single_report(args, results["single"], lat)
    out += trials_report(args, results)
    return "\n".join(out)


def single_report(args, single: dict, lat: float) -> list[str]:
    out = [
        f"**(a) One alert, fake LLM at {args.latency:g} ms per call** (the openai SDK over HTTP; "
        f"median of {len(single['parallel'])} alerts, after one warm-up):",
        "",
        "| design | wall time (median) | min | max | ideal | median / ideal |",
        "|---|---|---|---|---|---|",
    ]
    for key, label, ideal in (("parallel", "5 specialists concurrently, then the orchestrator", 2 * lat),
                              ("sequential", "seed's sequential design: the 6 calls one after another", 6 * lat)):
        walls = single[key]
        med = statistics.median(walls)
        out.append(f"| {label} | {med * 1000:.0f} ms | {min(walls) * 1000:.0f} ms | {max(walls) * 1000:.0f} ms "
                   f"| {ideal * 1000:.0f} ms | {med / ideal:.2f} |")
    par, seq = (statistics.median(single[k]) for k in ("parallel", "sequential"))
    out += ["", f"Speed-up {seq / par:.2f}x. Overhead beyond the model's latency (database writes, audit, "
                f"HTTP, parsing): {(par - 2 * lat) * 1000:.0f} ms per alert.", ""]
    return out


def trials_report(args, results: dict) -> list[str]:
    t = results["template"]
    out = [
        f"**(b) {args.alerts} alerts through one real Celery worker** (`celery -A casework worker --pool=P "
        f"--concurrency=N`, PostgreSQL, Redis, offline provider; a history of {t['history']} alerts, "
        f"{t['decided']} decided). *drain*: the alerts created first, then the worker started, timed from the "
        "first run's start to the last run's end; *live*: the worker running while one thread creates the "
        "alerts, timed from the first alert to the last run's end. Audit writes/s: entries written in that "
        "window (in live mode the creation's too) over its length. Load: 1-minute load average at the end.",
        "",
        "| mode | pool, N | alerts/s | wall | run p50 / p95 | runs completed | LLM calls | audit writes/s "
        "| audit chain | creating alerts | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["trials"]:
        done = r["runs"].get("completed", 0)
        chain = f"intact ({r['audit_checked']:,} entries)" if r["audit_ok"] else f"BROKEN: {r['audit_why']}"
        out.append(f"| {r['mode']} | {r['pool']} {r['concurrency']} | **{r['alerts_per_s']:.1f}** | {r['wall_s']:.1f} s "
                   f"| {r['run_p50_s'] * 1000:.0f} / {r['run_p95_s'] * 1000:.0f} ms | {done}/{r['alerts']} "
                   f"| {r['calls']:,} | {r['audit_per_s']:.0f} | {chain} | {r['create_per_s']:.0f} alerts/s "
                   f"| {r.get('load_avg_1m', 0):.1f} |")
    profiled = [r for r in results["trials"] if r.get("profile")]
    if profiled:
        shares = [{name: (share, orm) for name, share, orm in r["profile"]} for r in profiled]
        parts = [label for label, _ in PROFILE_BUCKETS] + ["other"]
        out += ["", "Where a threads worker's time goes (py-spy samples of its busy threads, drain; in brackets "
                    "the part of it spent inside Django's ORM or psycopg, waiting for locks included):", "",
                "| part | " + " | ".join(f"threads {r['concurrency']}" for r in profiled) + " |",
                "|---|" + "---|" * len(profiled)]
        for part in parts:
            cells = [f"{s[part][0]:.0%} ({s[part][1]:.0%})" if part in s else "-" for s in shares]
            out.append(f"| {part} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=200, help="(a) the fake LLM's latency per call, ms (200).")
    parser.add_argument("--repeats", type=int, default=7, help="(a) alerts measured, after one warm-up (7).")
    parser.add_argument("--alerts", type=int, default=500, help="(b) alerts per trial (500).")
    parser.add_argument("--trials", default=DEFAULT_TRIALS,
                        help=f"(b) mode:pool:concurrency, comma-separated ({DEFAULT_TRIALS}).")
    parser.add_argument("--timeout", type=float, default=900, help="(b) give up on a trial after this many s.")
    parser.add_argument("--skip-single", action="store_true", help="Skip (a).")
    parser.add_argument("--profile", default="", help="Sample each threads worker with py-spy into this folder "
                        "(PY_SPY names the binary) and report where its CPU goes.")
    parser.add_argument("--json", default="", help="Also write the raw results to this file.")
    parser.add_argument("--keep", action="store_true", help="Keep the databases afterwards.")
    parser.add_argument("--write-readme", action="store_true", help="Write the figures into bench/README.md.")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    with tempfile.TemporaryDirectory(prefix="casework-fraud-bench-") as var_dir:
        setup_django(var_dir)
        results: dict = {"machine": machine()}
        log.info("Preparing %s (migrate, history) and its template ...", DB)
        results["template"] = prepare_template()
        results["single"] = {}
        if not args.skip_single:
            log.info("(a) one alert at %g ms per LLM call, %d times ...", args.latency, args.repeats)
            results["single"] = single_alert(args.latency, args.repeats)
        rows = generate_alerts(args.alerts)
        results["trials"] = []
        plan = [(mode, pool, int(n)) for mode, pool, n in (t.split(":") for t in args.trials.split(",") if t)]
        try:
            for mode, pool, concurrency in plan:
                log.info("(b) %s, %d alerts, worker --pool=%s --concurrency=%d ...", mode, args.alerts, pool,
                         concurrency)
                result = trial(mode, pool, concurrency, rows, var_dir, args.timeout,
                               args.profile if pool == "threads" else "")
                log.info("    %.1f alerts/s, %s", result["alerts_per_s"],
                         {k: v for k, v in result.items() if k not in ("mode", "pool", "concurrency")})
                results["trials"].append(result)
                if args.json:
                    Path(args.json).write_text(json.dumps(results, indent=1, default=str))
        finally:
            if not args.keep:
                from django.db import connections

                connections.close_all()
                pg_admin(f'DROP DATABASE IF EXISTS "{TEMPLATE_DB}" WITH (FORCE)',
                         f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
            flush_broker()

    text = report(args, results)
    print()
    print(text)
    if args.write_readme:
        write_block("fraud_pipeline", text)
        print(f"\nWritten to {README.relative_to(REPO)}.")


if __name__ == "__main__":
    main()
