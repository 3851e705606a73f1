"""Velocity counters at 10^4 and 10^6 transactions of history (issue 47 part A). Run by hand:

    .venv/bin/python bench/txn_aggregates.py --n 1000000 --database-url postgres://postgres@127.0.0.1:5432/DB

The database must exist and be empty (a temporary SQLite file without --database-url). It
keeps counters for eight series (count by card, declines by card, sum by account, count by
device, IP, email and merchant, distinct devices by account) as N transactions over 90 days
would leave them once pruned (days for 92 days, hours for 8, minutes for 2 hours: what
casework.transactions.aggregates keeps), written with SQL (generate_series on PostgreSQL)
rather than through ingest, which would take hours at 10^6; then it times
casework.transactions.aggregates.observe for one new transaction (ten aggregates of eight
series, read and counted, committed), and a lone 30-day read. Prints median and p99 ms,
queries and rows read per call. The transactions' cards, devices and merchants are spread
so a card has about 100 transactions in 90 days and a merchant N/50 (a hot group).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

END = datetime(2026, 6, 1, tzinfo=UTC)
AGGREGATES = [
    {"fn": "count", "by": "card", "window": "10m"},
    {"fn": "count", "by": "card", "window": "1h", "where": [{"field": "auth_result", "op": "eq", "value": "declined"}]},
    {"fn": "sum", "of": "amount", "by": "account", "window": "24h"},
    {"fn": "avg", "of": "amount", "by": "card", "window": "30d", "current": False},
    {"fn": "count", "by": "card", "window": "90d"},
    {"fn": "count", "by": "device", "window": "1d"},
    {"fn": "count", "by": "ip", "window": "1h"},
    {"fn": "count", "by": "email", "window": "7d"},
    {"fn": "count", "by": "merchant", "window": "90d"},
    {"fn": "count_distinct", "of": "device", "by": "account", "window": "7d"},
]


def setup(database_url: str | None) -> None:
    var = tempfile.mkdtemp(prefix="txn_agg_bench_")
    os.environ.update({"DEBUG": "false", "SECRET_KEY": "bench", "VAR_DIR": var, "LLM_PROVIDER": "offline",
                       "ALLOWED_HOSTS": "*", "DATABASE_URL": database_url or f"sqlite:///{var}/bench.sqlite3",
                       "FIELD_ENCRYPTION_KEYS": "dGVzdC1vbmx5LWZpZWxkLWtleS1ub3QtZm9yLXByb2Q=",
                       "AUDIT_SEQUENCER": "inline", "DJANGO_SETTINGS_MODULE": "casework.settings"})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def groups(n: int) -> dict[str, tuple[int, str]]:
    """Per group kind: how many distinct values, and the value of transaction i (SQL)."""
    cards = max(1, n // 100)
    return {"card": (cards, "(i % {c})::text || ':4242'"), "account": (cards, "(i % {c})::text"),
            "device": (cards, "'dev-' || (i % {c})::text"), "ip": (cards // 4 or 1, "'10.' || (i % {c})::text"),
            "email": (cards, "md5((i % {c})::text)"), "merchant": (50, "'m-' || (i % {c})::text")}


def build(n: int) -> None:
    from django.db import connection, transaction

    from casework.transactions import rules
    from casework.transactions.aggregates.buckets import RETENTION, epoch
    from casework.transactions.aggregates.models import AggregateBucket, AggregateDistinct, AggregateSeries

    kinds = groups(n)
    start, span = epoch(END - timedelta(days=90)), 90 * 86400
    bucket, distinct = AggregateBucket._meta.db_table, AggregateDistinct._meta.db_table
    seen = set()
    for spec in AGGREGATES:
        agg = rules.Aggregate.model_validate(spec)
        if agg.series_key in seen:
            continue
        seen.add(agg.series_key)
        with transaction.atomic():
            AggregateSeries.objects.create(key=agg.series_key, definition=agg.series, created_at=END)
            count, grp = kinds[agg.by]
            grp = grp.format(c=count).replace("%", "%%")  # a literal % beside a parameter
            # One in ten declined (the declines series counts those only).
            where = "WHERE i %% 10 = 0" if agg.where else ""
            with connection.cursor() as cursor:
                for size, keep in RETENTION.items():
                    since = epoch(END) - keep
                    source = (f"SELECT {grp} AS grp, ({start} + i::bigint * {span} / {n}) / {size} * {size} AS start, "
                              f"1000 + i %% 9000 AS cents, i FROM generate_series(1, {n}) AS i {where}")
                    cursor.execute(f"INSERT INTO {bucket} (series, grp, size, start, n, cents) "
                                   f"SELECT %s, grp, {size}, start, count(*), sum(cents) FROM ({source}) x "
                                   f"WHERE start >= {since} GROUP BY grp, start", [agg.series_key])
                    if agg.fn == "count_distinct":
                        cursor.execute(f"INSERT INTO {distinct} (series, grp, size, start, value) "
                                       f"SELECT DISTINCT %s, grp, {size}, start, 'dev-' || (i %% 7)::text "
                                       f"FROM ({source}) x WHERE start >= {since}", [agg.series_key])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    if not (args.database_url or "").startswith("postgres"):
        sys.exit("Give a PostgreSQL --database-url (the build uses generate_series).")
    setup(args.database_url)
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from casework.transactions import aggregates, rules
    from casework.transactions.aggregates.counters import DbStore
    from casework.transactions.aggregates.models import AggregateBucket
    from casework.transactions.monitoring.models import DetectionRule, RuleVersion

    started = time.perf_counter()
    build(args.n)
    print(f"counters for {args.n:,} transactions: {AggregateBucket.objects.count():,} bucket rows, "
          f"built in {time.perf_counter() - started:.1f} s")
    # The ten aggregates as active rules (one each), so observe() computes them all.
    from django.contrib.auth import get_user_model

    author, approver = (get_user_model().objects.create(username=name) for name in ("bench-a", "bench-b"))
    for number, spec in enumerate(AGGREGATES, 1):
        rule = DetectionRule.objects.create(name=f"bench {number}", created_at=END)
        RuleVersion.objects.create(rule=rule, number=1, action="review", mode="shadow", status="active",
                                   author=author, approver=approver, created_at=END,
                                   conditions=[{"agg": spec, "op": "gte", "value": 1}])
    rng = random.Random(7)
    cards = groups(args.n)["card"][0]
    observe_ms, read_ms, queries, rows_read = [], [], [], []
    for k in range(args.calls):
        c = rng.randrange(cards)
        row = rules.row_of(amount=rng.randint(1, 500), mcc="5411", country="NL", channel="ecommerce",
                           occurred_at=END - timedelta(seconds=args.calls - k), home_country="NL", account=c,
                           card_last4="4242", device_id=f"dev-{c}", ip_address=f"10.{c % max(1, cards // 4)}",
                           email_hash="x" * 64, merchant_id=f"m-{c % 50}", auth_result="declined")
        with CaptureQueriesContext(connection) as captured:
            t0 = time.perf_counter()
            with transaction.atomic():
                values = aggregates.observe([row])
            observe_ms.append((time.perf_counter() - t0) * 1000)
        queries.append(len(captured))
        assert len(values[0]) == len(AGGREGATES), values
        store = DbStore()
        t0 = time.perf_counter()
        aggregates.value(rules.Aggregate.model_validate(AGGREGATES[4]), row, store)
        read_ms.append((time.perf_counter() - t0) * 1000)
        rows_read.append(store.rows_read)

    def line(name, times):
        times = sorted(times)
        return (f"{name}: median {statistics.median(times):.2f} ms, "
                f"p99 {times[max(0, int(len(times) * 0.99) - 1)]:.2f} ms")

    print(line("observe(1 transaction, 10 aggregates)", observe_ms), f"({statistics.median(queries):.0f} queries)")
    print(line("value(count by card, 90d)", read_ms), f"(rows read: median {statistics.median(rows_read):.0f}, "
                                                      f"max {max(rows_read)})")


if __name__ == "__main__":
    main()
