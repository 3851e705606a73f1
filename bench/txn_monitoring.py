"""Transaction monitoring under load (issue 24). Run by hand:

    .venv/bin/python bench/txn_monitoring.py [--n 100000] [--batch 1000] [--rules 50] [--workers 2]

On PostgreSQL and Redis (TXN_BENCH_PG, default postgres://postgres@127.0.0.1:5432; database
casework_txnmon_bench, dropped and made again; Redis TXN_BENCH_BROKER, default db 13,
flushed) with the README's production workers: one `celery -A casework worker --pool=threads
--concurrency=32` per core and one beat. 50 live rules (each selective, as real rules are:
together they hit about 0.5 % of the stream; hits open TXN cases whose investigations the same
workers run with the offline analyst) and 20 shadow ones.

Ingests N transactions in batches through transactions_import (the service behind
POST /api/transactions/ and manage.py import_transactions), as fast as it goes, from this
process, while the workers evaluate. Reports:
- transactions/s ingested, and evaluated (first ingested to last evaluated);
- ingestion to rule decision per transaction (evaluated_at - created_at): p50, p95, max;
- the evaluation's own cost per transaction (CPU ms and queries), measured in this process
  on one batch of 1,000 at 10 % and at 100 % of the history, to show it does not grow.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import random
import statistics
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
DB = os.environ.get("TXN_BENCH_DB", "casework_txnmon_bench")
BROKER = os.environ.get("TXN_BENCH_BROKER", "redis://127.0.0.1:6379/13")
MCCS = ["5411", "5812", "5732", "5999", "4111", "5541", "6011", "5944", "7995", "4829", "5734", "5651"]
COUNTRIES = ["NL", "DE", "FR", "GB", "US", "ES", "IT", "BE", "PL", "NG", "BR", "RO"]
T0 = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)


def setup(var_dir: str) -> None:
    import redis

    pg_admin(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)', f'CREATE DATABASE "{DB}"')
    redis.Redis.from_url(BROKER).flushdb()
    os.environ.update({"DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret", "FIELD_ENCRYPTION_KEYS": "YmVuY2gtb25seS1maWVsZC1rZXktbm90LWZvci1wcm8=",
                       "VAR_DIR": var_dir, "DATABASE_URL": f"{PG}/{DB}", "CELERY_BROKER_URL": BROKER,
                       "LLM_PROVIDER": "offline", "DEBUG": "false"})
    os.environ.pop("CELERY_TASK_ALWAYS_EAGER", None)
    import django

    django.setup()
    for name in ("celery", "casework", "agents", "audit"):
        logging.getLogger(name).setLevel(logging.WARNING)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def rules(n_live: int, n_shadow: int, rng: random.Random) -> None:
    from casework.people.roles import INVESTIGATOR, MANAGER
    from casework.people.services import user_create
    from casework.transactions.monitoring.services import rate_set, rule_create, rule_version_approve

    author = user_create(actor="system", username="author", password="x-bench-123456", role=INVESTIGATOR)
    approver = user_create(actor="system", username="approver", password="x-bench-123456", role=MANAGER)
    for currency, rate in (("USD", "0.92"), ("GBP", "1.17")):
        rate_set(actor=approver, currency=currency, rate=rate)
    for i in range(n_live + n_shadow):
        conditions = [{"field": "amount", "op": "gte", "value": rng.choice([800, 1000, 1500, 2000])},
                      {"field": "mcc", "op": "in", "value": rng.sample(MCCS, 3)},
                      {"field": "country", "op": "in", "value": rng.sample(COUNTRIES, 4)}]
        if i % 3 == 0:
            conditions.append({"field": "channel", "op": "eq", "value": "ecommerce"})
        version = rule_create(actor=author, name=f"bench rule {i:02d}", conditions=conditions,
                              action="review" if i % 5 else "block", mode="live" if i < n_live else "shadow")
        rule_version_approve(actor=approver, version=version)


def stream(n: int, rng: random.Random, start: int = 0) -> list[dict]:
    rows = []
    for k in range(start, start + n):
        card = rng.randrange(20_000)
        amount = round(rng.lognormvariate(3.8, 1.0), 2) + 0.5
        rows.append({"transaction_id": f"TX-B-{k:07d}", "account_id": f"C-{card:05d}", "card_last4": f"{card % 10000:04d}",
                     "amount": f"{amount:.2f}", "currency": rng.choice(["EUR", "EUR", "EUR", "USD", "GBP"]),
                     "merchant": f"Merchant {rng.randrange(3000)}", "mcc": rng.choice(MCCS),
                     "country": rng.choice(COUNTRIES), "channel": rng.choice(["pos", "contactless", "ecommerce", "atm"]),
                     "occurred_at": (T0 + datetime.timedelta(seconds=k * 3)).isoformat(), "home_country": "NL",
                     "device_id": f"dev-{rng.randrange(50_000)}", "ip_address": f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                     "auth_result": "approved", "merchant_id": f"M-{rng.randrange(3000)}"})
    return rows


class Workers:
    def __init__(self, count: int, var_dir: str):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        celery = str(Path(sys.executable).parent / "celery")
        self.procs, self.logs = [], []
        for n in range(count + 1):
            log = (Path(var_dir) / f"proc-{n}.log").open("w")
            cmd = ([celery, "-A", "casework", "beat", "--loglevel=WARNING", "-s", f"{var_dir}/beat"] if n == count else
                   [celery, "-A", "casework", "worker", "--pool=threads", "--concurrency=32",
                    f"--hostname=txnbench{n}@%h", "--without-gossip", "--without-mingle", "--loglevel=WARNING"])
            self.procs.append(subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True))
            self.logs.append(log)

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


def ingest(rows: list[dict], batch: int) -> float:
    from django.db import transaction

    from casework.transactions.ingest import transactions_import

    started = time.perf_counter()
    for i in range(0, len(rows), batch):
        with transaction.atomic():
            transactions_import(actor="system", rows=rows[i:i + batch], via="bench")
    return time.perf_counter() - started


def evaluation_cost(rng: random.Random, start: int) -> dict:
    """Ingest 1,000 with the message held back, then evaluate them here: CPU ms and queries per transaction."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from casework.transactions import ingest
    from casework.transactions.monitoring import evaluate

    held = ingest.evaluate_after_commit
    ingest.evaluate_after_commit = lambda ids: None
    try:
        with transaction.atomic():
            created = ingest.transactions_import(actor="system", rows=stream(1000, rng, start=start), via="bench")
    finally:
        ingest.evaluate_after_commit = held
    ids = [t.pk for t in created]
    cpu = time.process_time()
    with CaptureQueriesContext(connection) as queries:
        counts = evaluate.transactions_evaluate(ids)
    cpu = time.process_time() - cpu
    return {"cpu_ms_per_txn": round(cpu * 1000 / len(ids), 3), "queries_per_txn": round(len(queries) / len(ids), 3),
            "hits": counts["hits"], "opened": counts["opened"]}


def wait_evaluated(total: int, timeout: float) -> None:
    from casework.transactions.models import Transaction

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Transaction.objects.filter(evaluated_at__isnull=True).exists() and Transaction.objects.count() >= total:
            return
        time.sleep(0.5)
    raise SystemExit("Timed out waiting for the workers to evaluate every transaction.")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rules", type=int, default=50)
    parser.add_argument("--shadow", type=int, default=20)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    var = tempfile.mkdtemp(prefix="txnmon_bench_")
    setup(var)
    rng = random.Random(24)
    rules(args.rules, args.shadow, rng)
    rows = stream(args.n, rng)
    workers = Workers(args.workers, var)
    try:
        time.sleep(3)  # the workers connect
        tenth = args.n // 10
        seconds_first = ingest(rows[:tenth], args.batch)
        wait_evaluated(tenth, timeout=600)
        early = evaluation_cost(rng, start=10_000_000)
        seconds_rest = ingest(rows[tenth:], args.batch)
        wait_evaluated(args.n + 1000, timeout=1800)
        late = evaluation_cost(rng, start=20_000_000)
    finally:
        workers.stop()
    from django.db.models import Count, Max, Min

    from casework.cases.models import Case
    from casework.transactions.models import Transaction
    from casework.transactions.monitoring.models import RuleHit

    streamed = Transaction.objects.filter(transaction_id__startswith="TX-B-")
    lat = sorted((e - c).total_seconds() for c, e in streamed.values_list("created_at", "evaluated_at"))
    span = streamed.aggregate(first=Min("created_at"), last=Max("evaluated_at"))
    evaluated_per_s = len(lat) / (span["last"] - span["first"]).total_seconds()
    hits = RuleHit.objects.values("mode").annotate(n=Count("id"))
    result = {
        "machine": machine(), "n": args.n, "batch": args.batch, "live_rules": args.rules, "shadow_rules": args.shadow,
        "workers": args.workers, "ingested_per_s": round(args.n / (seconds_first + seconds_rest)),
        "evaluated_per_s": round(evaluated_per_s),
        "latency_s": {"p50": round(statistics.median(lat), 3), "p95": round(lat[int(len(lat) * 0.95)], 3),
                      "max": round(lat[-1], 3)},
        "cost_at_10pct": early, "cost_at_100pct": late,
        "hits": {row["mode"]: row["n"] for row in hits},
        "cases": Case.objects.filter(case_type="transaction_investigation").count(),
    }
    import json

    print(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
