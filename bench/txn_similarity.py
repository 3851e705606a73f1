"""Similar past investigations at 100,000 (issue 10). Run by hand:

    .venv/bin/python bench/txn_similarity.py [--n 100000] [--queries 200] [--database-url URL]

Builds N completed investigations (cases and investigations bulk-inserted, random pattern
scores and yes/no signals, each with its bucket) in its own database (a temporary SQLite
file unless --database-url is given, e.g. postgres://postgres@127.0.0.1:5432/casework_txn_bench,
which must exist and be empty), then times casework.transactions.similarity.nearest for
random query vectors, beside a full scan of every vector (what the bucket filter avoids).
Prints the median and p95 milliseconds per query, and how many candidates were scored.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def setup(database_url: str | None) -> None:
    var = tempfile.mkdtemp(prefix="txn_bench_")
    os.environ.update({"DEBUG": "true", "SECRET_KEY": "bench", "VAR_DIR": var, "LLM_PROVIDER": "offline",
                       "DATABASE_URL": database_url or f"sqlite:///{var}/bench.sqlite3",
                       "AUDIT_SEQUENCER": "inline", "DJANGO_SETTINGS_MODULE": "casework.settings"})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def vector(rng: random.Random) -> list[float]:
    scores = [round(rng.random() ** 2, 3) for _ in range(4)]
    signals = [1.0 if rng.random() < p else 0.0 for p in (0.3, 0.35, 0.2, 0.15, 0.1)]
    return scores + signals


def build(n: int, rng: random.Random) -> None:
    from datetime import UTC, datetime

    from casework.cases.models import Case
    from casework.transactions import similarity
    from casework.transactions.models import CardAccount, Investigation, Transaction

    account = CardAccount.objects.create(account_id="BENCH", home_country="NL")
    txn = Transaction.objects.create(transaction_id="TX-BENCH", account=account, card_last4="0000", amount=10,
                                     currency="EUR", merchant="Bench", mcc="5411", country="NL", channel="pos",
                                     occurred_at=datetime(2026, 3, 1, tzinfo=UTC))
    batch = 5_000
    for start in range(0, n, batch):
        cases = Case.objects.bulk_create([
            Case(reference=f"TXN-B{i:07d}", case_type="transaction_investigation", title="bench")
            for i in range(start, min(n, start + batch))])
        rows = []
        for case in cases:
            v = vector(rng)
            rows.append(Investigation(case=case, transaction=txn, status="COMPLETED", severity="LOW", features=v,
                                      feature_bucket=similarity.bucket_of(v)))
        Investigation.objects.bulk_create(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    setup(args.database_url)
    from django.conf import settings

    from casework.transactions import similarity
    from casework.transactions.models import Investigation

    rng = random.Random(3)
    started = time.perf_counter()
    build(args.n, rng)
    print(f"built {args.n:,} investigations in {time.perf_counter() - started:.1f} s")

    bucketed, scanned, candidates = [], [], []
    for _ in range(args.queries):
        query = vector(rng)
        t0 = time.perf_counter()
        similarity.nearest(query)
        bucketed.append((time.perf_counter() - t0) * 1000)
        candidates.append(min(settings.TXN_SIMILARITY_CANDIDATES, Investigation.objects.filter(
            feature_bucket__in=similarity.neighbour_buckets(similarity.bucket_of(query))).count()))
    for _ in range(max(5, args.queries // 20)):
        query = vector(rng)
        t0 = time.perf_counter()
        near = sorted((math.dist(query, f), pk) for pk, f in Investigation.objects.values_list("pk", "features")
                      if math.dist(query, f) <= similarity.MAX_DISTANCE)[:5]
        scanned.append((time.perf_counter() - t0) * 1000)
        del near

    def line(name, times):
        times = sorted(times)
        return f"{name}: median {statistics.median(times):.1f} ms, p95 {times[int(len(times) * 0.95) - 1]:.1f} ms"

    print(line("bucketed nearest()", bucketed), f"(candidates scored: median {statistics.median(candidates):,.0f})")
    print(line("full scan of every vector", scanned))


if __name__ == "__main__":
    main()
