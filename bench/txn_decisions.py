"""Decisions at authorisation time under load (issue 47). Run by hand:

    .venv/bin/python bench/txn_decisions.py [--history 10000] [--rates 100,250,500] [--seconds 20]
        [--rules 50] [--list-rules 10] [--velocity-rules 10] [--shadow 10] [--list-entries 10000] [--gunicorn-workers 4]

On PostgreSQL and Redis (TXN_BENCH_PG, default postgres://postgres@127.0.0.1:5432; database
casework_txndec_bench, dropped and made again; Redis TXN_BENCH_REDIS, default db 7, flushed:
the Celery broker and the cache, which holds the API throttle counters). The web server is
gunicorn exactly as the README's production section starts it (4 workers, 8 threads each),
with one Celery worker (`--pool=threads --concurrency=32`) running the full evaluation that
follows each decision; on a bigger machine there would be one per core.

Set-up: `--history` transactions of history bulk-loaded with COPY (20,000 card accounts,
already evaluated), a deny list and an allow list of devices with `--list-entries` values
each, `--rules` live rules of which `--list-rules` test list membership (an `in_list`
condition, one indexed lookup) and the rest compare fields (2 to 4 conditions each, selective
as real rules are), plus `--shadow` shadow rules (they run in the worker, after the answer).
`--velocity-rules` of the field rules (default 10) also read a velocity aggregate (a count by
card over 10 minutes, a sum by card over an hour, distinct devices by account over 7 days):
their counters are kept in Redis (TXN_AGGREGATES_REDIS_URL, the bench's Redis db), built from
the history once after the set-up (aggregates.rebuild(), timed), and read and counted by each
decision in one round trip (`--counters db` keeps them in the database tables instead, as
before).

First the decision service alone, in the bench's process (no HTTP): CPU ms, queries and wall
ms per decision over 190 decisions, the figures that say whether the cost grows with history.
Then, for each rate in `--rates`, an open-loop driver (httpx's AsyncClient, one event loop)
sends POST /api/transactions/decide at that rate for `--seconds` (new transactions on the
cards of the history; about 1 % carry a deny-listed device) and reports the client's latency
(p50, p90, p99, max, counted from when each request was due: no coordinated omission), the
server's own `latency_us` (p50, p99), errors (any answer other than 201, or none within 15 s
of the phase's end), timed-out answers and outcomes. The driver runs on the same
machine: its CPU is taken from the server's, so the figures are a floor on what the server does.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fraud_pipeline import machine, pg_admin  # noqa: E402 - bench/ is on sys.path

REPO = Path(__file__).resolve().parents[1]
PG = os.environ.get("TXN_BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DB = os.environ.get("TXN_BENCH_DB", "casework_txndec_bench")
REDIS = os.environ.get("TXN_BENCH_REDIS", "redis://127.0.0.1:6379/7")
PORT = int(os.environ.get("TXN_BENCH_PORT", "8047"))
MCCS = ["5411", "5812", "5732", "5999", "4111", "5541", "6011", "5944", "7995", "4829", "5734", "5651"]
COUNTRIES = ["NL", "DE", "FR", "GB", "US", "ES", "IT", "BE", "PL", "NG", "BR", "RO"]
CARDS = 20_000
IN_FLIGHT = 128  # the driver's open requests at most (4 gunicorn workers x 8 threads take 32 at a time)
DRAIN = 15.0  # seconds after the last request was due before the unanswered ones count as errors
T0 = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)


def setup(var_dir: str, counters: str = "redis") -> None:
    import redis

    pg_admin(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)', f'CREATE DATABASE "{DB}"')
    redis.Redis.from_url(REDIS).flushdb()
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret",
        "FIELD_ENCRYPTION_KEYS": "YmVuY2gtb25seS1maWVsZC1rZXktbm90LWZvci1wcm8=", "VAR_DIR": var_dir,
        "DATABASE_URL": f"{PG}/{DB}", "CELERY_BROKER_URL": REDIS, "CACHE_URL": REDIS, "LLM_PROVIDER": "offline",
        "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # A payment system's service account calls far above the default per-user throttle (1,200/min).
        "API_THROTTLE_USER": "10000000/min",
        # The velocity counters: in Redis (one round trip per decision) or in the database.
        "TXN_AGGREGATES_REDIS_URL": REDIS if counters == "redis" else ""})
    os.environ.pop("CELERY_TASK_ALWAYS_EAGER", None)
    import django

    django.setup()
    for name in ("celery", "casework", "agents", "audit", "django"):
        logging.getLogger(name).setLevel(logging.WARNING)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load_history(n: int, rng: random.Random) -> float:
    """COPY the card accounts and n transactions straight into their tables (already evaluated)."""
    import psycopg

    started = time.perf_counter()
    now = datetime.datetime.now(datetime.UTC).isoformat()
    with psycopg.connect(f"{PG}/{DB}", autocommit=True) as conn:
        with conn.cursor() as cur:
            with cur.copy("COPY transactions_cardaccount (account_id, holder_name, home_country, created_at) "
                          "FROM STDIN") as copy:
                for card in range(CARDS):
                    copy.write_row((f"C-{card:05d}", "", "NL", now))
            ids = dict(cur.execute("SELECT account_id, id FROM transactions_cardaccount").fetchall())
            columns = ("transaction_id, account_id, card_last4, amount, currency, merchant, mcc, country, channel, "
                       "device_id, occurred_at, auth_result, three_ds_result, avs_result, cvv_result, ip_address, "
                       "email_hash, bin, merchant_id, settlement_amount, evaluated_at, is_fraud, created_at, aggregates")
            with cur.copy(f"COPY transactions_transaction ({columns}) FROM STDIN") as copy:
                step = datetime.timedelta(days=90) / max(n, 1)
                for k in range(n):
                    card = rng.randrange(CARDS)
                    amount = f"{round(rng.lognormvariate(3.8, 1.0), 2) + 0.5:.2f}"
                    occurred = T0 - datetime.timedelta(days=90) + step * k
                    copy.write_row((f"TX-H-{k:08d}", ids[f"C-{card:05d}"], f"{card % 10000:04d}", amount, "EUR",
                                    f"Merchant {rng.randrange(3000)}", rng.choice(MCCS), rng.choice(COUNTRIES),
                                    rng.choice(["pos", "contactless", "ecommerce", "atm"]),
                                    f"dev-{rng.randrange(50_000)}", occurred.isoformat(), "approved", "", "", "",
                                    f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}", "",
                                    "", f"M-{rng.randrange(3000)}", amount, now, False, now, "{}"))
        conn.execute("ANALYZE transactions_transaction")
    return time.perf_counter() - started


# Velocity conditions the bench's velocity rules draw from (each with a field condition).
VELOCITY = [
    {"agg": {"fn": "count", "by": "card", "window": "10m"}, "op": "gte", "value": 6},
    {"agg": {"fn": "sum", "of": "amount", "by": "card", "window": "1h"}, "op": "gte", "value": 3000},
    {"agg": {"fn": "count_distinct", "of": "device", "by": "account", "window": "7d"}, "op": "gte", "value": 4},
]


def rules_and_lists(args, rng: random.Random) -> str:
    """The rules, the lists and their entries; returns the driver's API token."""
    import psycopg

    from casework.people.roles import INVESTIGATOR, MANAGER
    from casework.people.services import user_create
    from casework.security.tokens import api_token_create
    from casework.transactions.lists.services import value_list_create
    from casework.transactions.monitoring.services import rule_create, rule_version_approve

    author = user_create(actor="system", username="author", password="x-bench-123456", role=INVESTIGATOR)
    approver = user_create(actor="system", username="approver", password="x-bench-123456", role=MANAGER)
    caller = user_create(actor="system", username="psp", password="x-bench-123456", role=INVESTIGATOR)
    deny = value_list_create(actor=author, name="deny-devices", kind="deny", field="device")
    allow = value_list_create(actor=author, name="trusted-devices", kind="allow", field="device")
    watch = value_list_create(actor=author, name="watch-ips", kind="deny", field="ip")
    # Entries in bulk (the bench's set-up, not a path a person takes: the services audit each one).
    now = datetime.datetime.now(datetime.UTC).isoformat()
    with psycopg.connect(f"{PG}/{DB}", autocommit=True) as conn, conn.cursor() as cur:
        with cur.copy("COPY transactions_listentry (value_list_id, value, note, added_at) FROM STDIN") as copy:
            for k in range(args.list_entries):
                copy.write_row((deny.pk, f"dev-bad-{k}", "", now))
                copy.write_row((allow.pk, f"dev-{k * 5}", "", now))
                copy.write_row((watch.pk, f"10.200.{k // 250 % 256}.{k % 250 + 1}", "", now))
    for i in range(args.rules + args.shadow):
        if i < args.list_rules:
            conditions = [{"in_list": "watch-ips", "field": "ip"},
                          {"field": "amount", "op": "gte", "value": rng.choice([100, 200, 500])}]
        elif i < args.list_rules + args.velocity_rules:
            conditions = [rng.choice(VELOCITY), {"field": "mcc", "op": "in", "value": rng.sample(MCCS, 3)}]
        else:
            conditions = [{"field": "amount", "op": "gte", "value": rng.choice([800, 1000, 1500, 2000])},
                          {"field": "mcc", "op": "in", "value": rng.sample(MCCS, 3)},
                          {"field": "country", "op": "in", "value": rng.sample(COUNTRIES, 4)}]
            if i % 3 == 0:
                conditions.append({"field": "channel", "op": "eq", "value": "ecommerce"})
        version = rule_create(actor=author, name=f"bench rule {i:02d}", conditions=conditions,
                              action="review" if i % 5 else "block", mode="live" if i < args.rules else "shadow")
        rule_version_approve(actor=approver, version=version)
    return api_token_create(actor="system", user=caller, name="bench")[1]


def transaction(k: int, rng: random.Random) -> dict:
    card = rng.randrange(CARDS)
    device = f"dev-bad-{rng.randrange(1000)}" if rng.random() < 0.01 else f"dev-{rng.randrange(50_000)}"
    return {"transaction_id": f"TX-D-{k:08d}", "account_id": f"C-{card:05d}", "card_last4": f"{card % 10000:04d}",
            "amount": f"{round(rng.lognormvariate(3.8, 1.0), 2) + 0.5:.2f}", "currency": "EUR",
            "merchant": f"Merchant {rng.randrange(3000)}", "mcc": rng.choice(MCCS), "country": rng.choice(COUNTRIES),
            "channel": rng.choice(["pos", "contactless", "ecommerce", "atm"]), "device_id": device,
            "ip_address": f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            "merchant_id": f"M-{rng.randrange(3000)}", "auth_result": "approved",
            "occurred_at": (T0 + datetime.timedelta(seconds=k)).isoformat()}


def in_process_cost(rng: random.Random, count: int = 200) -> dict:
    """The decision service itself, in this process (no HTTP, no middleware): CPU ms, queries
    and wall ms per decision, and how many rules it evaluated. Robust to the machine's load in
    CPU and queries; the wall time is not."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from casework.transactions.decisions.services import transaction_decide

    rows = [transaction(95_000_000 + k, rng) for k in range(count)]
    for row in rows[:10]:  # warm: the parsed rules' cache, the connection
        transaction_decide(actor="system", data=row, started=time.monotonic())
    walls = []
    evaluated = 0
    cpu = time.process_time()
    with CaptureQueriesContext(connection) as queries:
        for row in rows[10:]:
            began = time.perf_counter()
            decision = transaction_decide(actor="system", data=row, started=time.monotonic())
            walls.append(time.perf_counter() - began)
            evaluated += decision.rules_evaluated
    cpu = time.process_time() - cpu
    n = count - 10
    walls.sort()
    return {"cpu_ms": round(cpu * 1000 / n, 2), "queries": round(len(queries) / n, 1),
            "wall_ms_p50": round(walls[n // 2] * 1000, 2), "wall_ms_p99": round(walls[int(n * 0.99)] * 1000, 2),
            "rules_evaluated_mean": round(evaluated / n, 1)}


def process_cpu(roots: list[int]) -> float:
    """CPU seconds (user + system) used so far by these processes and their children (from
    /proc: gunicorn's workers, the Celery worker's)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks
    wanted, total = set(roots), 0.0
    for pid in sorted(used):
        ancestor = pid
        while ancestor and ancestor not in wanted:
            ancestor = parents.get(ancestor, 0)
        if ancestor:
            total += used[pid]
    return total


class Servers:
    """gunicorn as the README starts it, and one Celery worker."""

    def __init__(self, var_dir: str, gunicorn_workers: int, celery_workers: int):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        bin_dir = Path(sys.executable).parent
        commands = [[str(bin_dir / "gunicorn"), "casework.wsgi:application", "--bind", f"127.0.0.1:{PORT}",
                     "--workers", str(gunicorn_workers), "--threads", "8", "--limit-request-line", "0"]]
        commands += [[str(bin_dir / "celery"), "-A", "casework", "worker", "--pool=threads", "--concurrency=32",
                      f"--hostname=txndec{n}@%h", "--without-gossip", "--without-mingle", "--loglevel=WARNING"]
                     for n in range(celery_workers)]
        self.procs, self.logs = [], []
        for n, command in enumerate(commands):
            log = (Path(var_dir) / f"proc-{n}.log").open("w")
            self.procs.append(subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True))
            self.logs.append(log)

    def wait_ready(self, token: str) -> None:
        import httpx

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{PORT}/api/transaction-lists/",
                             headers={"Authorization": f"Token {token}"}, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise SystemExit("gunicorn did not answer within 60 s")

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        for log in self.logs:
            log.close()


async def drive(token: str, rate: float, seconds: float, start: int, rng: random.Random) -> dict:
    """Open loop: request i is due at t0 + i / rate whether or not earlier ones have answered,
    and its latency is counted from when it was due (so a server that falls behind shows it,
    no coordinated omission). At most IN_FLIGHT requests are open at once; a request still
    unanswered DRAIN seconds after the last one was due is an error ("not answered")."""
    import httpx

    total = int(rate * seconds)
    bodies = [json.dumps(transaction(start + i, rng)).encode() for i in range(total)]
    latencies: list[float] = []
    server: list[int] = []
    outcomes: dict[str, int] = {}
    errors: dict[str, int] = {}
    timed_out = 0
    slots = asyncio.Semaphore(IN_FLIGHT)
    limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{PORT}", limits=limits, headers=headers,
                                 timeout=httpx.Timeout(DRAIN + seconds)) as client:
        async def one(i: int, due: float) -> None:
            nonlocal timed_out
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                async with slots:
                    response = await client.post("/api/transactions/decide", content=bodies[i])
            except httpx.HTTPError as exc:
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                return
            latencies.append(time.perf_counter() - due)
            if response.status_code != 201:
                errors[str(response.status_code)] = errors.get(str(response.status_code), 0) + 1
                return
            body = response.json()
            server.append(body["latency_us"])
            outcomes[body["outcome"]] = outcomes.get(body["outcome"], 0) + 1
            timed_out += body["timed_out"]

        t0 = time.perf_counter() + 0.2
        tasks = [asyncio.ensure_future(one(i, t0 + i / rate)) for i in range(total)]
        done, pending = await asyncio.wait(tasks, timeout=seconds + DRAIN)
        for task in pending:
            task.cancel()
        if pending:
            errors["not answered"] = len(pending)
        elapsed = time.perf_counter() - t0
    latencies.sort()
    server.sort()

    def pct(values, q):
        return values[min(len(values) - 1, int(len(values) * q))] if values else None

    ms = 1000
    return {"rate": rate, "sent": total, "answered_per_s": round(len(server) / elapsed, 1),
            "client_ms": {"p50": round(pct(latencies, 0.5) * ms, 1), "p90": round(pct(latencies, 0.9) * ms, 1),
                          "p99": round(pct(latencies, 0.99) * ms, 1), "max": round(latencies[-1] * ms, 1)}
            if latencies else None,
            "server_ms": {"p50": round(pct(server, 0.5) / 1000, 2), "p99": round(pct(server, 0.99) / 1000, 2)}
            if server else None,
            "errors": sum(errors.values()), "error_kinds": errors, "timed_out": timed_out, "outcomes": outcomes}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--history", type=int, default=10_000)
    parser.add_argument("--rates", default="100,250,500")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rules", type=int, default=50)
    parser.add_argument("--list-rules", type=int, default=10)
    parser.add_argument("--velocity-rules", type=int, default=10)
    parser.add_argument("--shadow", type=int, default=10)
    parser.add_argument("--list-entries", type=int, default=10_000)
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument("--celery-workers", type=int, default=1)
    parser.add_argument("--counters", choices=["redis", "db"], default="redis")
    parser.add_argument("--in-process-only", action="store_true", help="Only the decision service's own cost.")
    args = parser.parse_args()
    var = tempfile.mkdtemp(prefix="txndec_bench_")
    setup(var, args.counters)
    rng = random.Random(47)
    loaded = load_history(args.history, rng)
    token = rules_and_lists(args, rng)
    from casework.transactions import aggregates

    began = time.perf_counter()
    aggregates.rebuild(grace=0)  # Redis: the first generation from the history (db: built at approval)
    counters_built = time.perf_counter() - began
    cost = in_process_cost(rng)
    print(json.dumps({"in_process": cost, "load_average": [round(x, 1) for x in os.getloadavg()]}), flush=True)
    if args.in_process_only:
        return
    from django.db import connections

    connections.close_all()
    servers = Servers(var, args.gunicorn_workers, args.celery_workers)
    runs = []
    try:
        servers.wait_ready(token)
        asyncio.run(drive(token, 10, 3, 90_000_000, rng))  # warm-up: every gunicorn thread connects
        web, worker = [servers.procs[0].pid], [p.pid for p in servers.procs[1:]]
        for n, rate in enumerate(float(r) for r in args.rates.split(",")):
            cpu_web, cpu_worker = process_cpu(web), process_cpu(worker)
            runs.append(asyncio.run(drive(token, rate, args.seconds, n * 10_000_000, rng)))
            time.sleep(3)  # the worker's evaluations of this phase
            answered = sum(runs[-1]["outcomes"].values()) or 1
            # CPU per answered decision: the web server's (HTTP, middleware, the decision) and
            # the worker's (the full evaluation after it). The machine's load does not change these
            # much; they say what rate two idle cores would sustain.
            runs[-1]["cpu_ms_per_decision"] = {
                "web": round((process_cpu(web) - cpu_web) * 1000 / answered, 2),
                "worker": round((process_cpu(worker) - cpu_worker) * 1000 / answered, 2)}
            runs[-1]["load_average"] = [round(x, 1) for x in os.getloadavg()]
            print(json.dumps(runs[-1]), flush=True)
    finally:
        servers.stop()
    from casework.transactions.models import Decision

    result = {"machine": machine(), "history": args.history, "history_load_s": round(loaded, 1),
              "counters": args.counters, "counters_build_s": round(counters_built, 1),
              "load_average": os.getloadavg(),
              "live_rules": args.rules, "list_rules": args.list_rules, "velocity_rules": args.velocity_rules,
              "shadow_rules": args.shadow, "list_entries": args.list_entries * 3,
              "gunicorn": f"{args.gunicorn_workers} workers x 8 threads", "in_process": cost, "celery_workers": args.celery_workers,
              "decisions": Decision.objects.count(),
              "evaluated_by_worker": Decision.objects.filter(evaluated_at__isnull=False).count(), "runs": runs}
    print(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
