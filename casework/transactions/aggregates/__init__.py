"""Velocity and aggregates for the rule language, maintained incrementally.

The language (casework.transactions.rules) lets a condition read an aggregate: count, sum,
avg or count_distinct over the transaction's card, account, device, IP, email hash or
merchant, in a window of 1 minute to 90 days, with filters. The values come from counters
in time buckets (buckets.py), kept in the database (models.py: AggregateBucket,
AggregateDistinct) for each series an active rule reads (AggregateSeries), and updated in
the same database transaction that stores the transactions: they are never stale, and
reading one costs a bounded number of rows (about 200 buckets for a 90-day window) whatever
the size of the history. With TXN_AGGREGATES_REDIS_URL they are kept in Redis instead
(redis_store.py: the same buckets, one round trip per transaction for every read and
increment, rebuilt from the database when Redis loses them; the tables are then unused).

Semantics: a transaction's aggregate is computed when it is stored, from the counters as they
stand (every transaction stored before it, in arrival order; within a batch, in time order)
over the buckets of its window, plus itself (unless `current` is false); then it is counted.
The values are kept on the transaction (Transaction.aggregates: key -> value), and the
detection rules read them there, so the worker evaluating a batch later sees each
transaction as it was when it arrived. The back-test (casework.transactions.backtest)
replays the history in time order through the same computation in memory (MemoryStore): a
stream that arrived in time order gives the same values, so the same hits (a test replays
one both ways). A transaction that arrives late (older than transactions already stored)
sees the later ones that share its buckets: live, nothing can see the future it has not yet
been told about; the back-test would not count them.

Public functions (the decision endpoint calls these too):

    observe(rows) -> list[dict]
        For rule rows (rules.row_of, with account and card_last4) in arrival order, inside
        the database transaction that stores them: each row's values for the aggregates of
        the active rules ({key: value}), then counts them. transactions_import calls it and
        stores the result in Transaction.aggregates; call it once per stored transaction.
    value(agg, row, counted=False) -> number | None
        One aggregate for one row from the tables, without counting the row (a bounded read:
        one query); counted=True for a row already stored (and so counted).
    with_aggregates(row, snapshot, aggs) -> row
        The row with row["agg"] filled for rules.rule_matches: the snapshot, and `value` for
        an aggregate of `aggs` (rules.aggregates_of(conditions)) the snapshot lacks. rules.explain(conditions, row) then says why a rule
        matched, with the values it compared ("count(card, 10m) = 7 ≥ 6").

A decision at authorisation time stores its transaction with transactions_import (which
calls observe and keeps the snapshot on Transaction.aggregates), then evaluates its rules on
casework.transactions.ingest.rule_row(txn) with row["agg"] = txn.aggregates.
    series_sync()
        Keep counters for exactly the series the active rules read: a new series is built
        from the history at once (a scan of the last 92 days, once); a series no rule reads
        is dropped. Rule activation and disabling call it.
    rebuild(), prune()
        Recompute every series from the transactions (`manage.py aggregates_rebuild`), and
        drop buckets no window reads any more (the beat runs it hourly).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from casework.transactions import rules, ruleset
from casework.transactions.aggregates import redis_store
from casework.transactions.aggregates.buckets import SIZES, epoch, horizon
from casework.transactions.aggregates.counters import DbStore, MemoryStore, Series, compute, series_of
from casework.transactions.aggregates.models import AggregateBucket, AggregateDistinct, AggregateSeries

logger = logging.getLogger(__name__)

def active_aggregates() -> list[rules.Aggregate]:
    """The aggregates the active rule versions (live and shadow) read, one per key (the rule
    set compiled once per process: casework.transactions.ruleset)."""
    return list(ruleset.active().aggregates)


def _maintained(*, lock: bool) -> list[Series]:
    """The series kept up to date. Under PostgreSQL their rows are share-locked, so a rebuild
    (which locks them for update) never misses or double-counts a batch."""
    if lock and connection.vendor == "postgresql":
        table = AggregateSeries._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT key, definition FROM {table} ORDER BY key FOR SHARE")
            found = cursor.fetchall()
    else:
        found = list(AggregateSeries.objects.order_by("key").values_list("key", "definition"))
    return [Series.of_definition(key, json.loads(d) if isinstance(d, str) else d) for key, d in found]


def observe(rows: list[dict], aggs: list[rules.Aggregate] | None = None) -> list[dict]:
    """Each row's aggregate values, then count the rows (see the module). `aggs`: the active
    rules' aggregates, when the caller has them (ruleset.active().aggregates)."""
    if not rows:
        return []
    if redis_store.enabled():
        return _observe_redis(rows, active_aggregates() if aggs is None else list(aggs))
    series = _maintained(lock=True)
    if not series:  # no active rule reads an aggregate
        return [{} for _ in rows]
    aggs = active_aggregates() if aggs is None else list(aggs)
    kept = {s.key: s for s in series}
    readable = [(a.key, a, kept[a.series_key]) for a in aggs if a.series_key in kept]
    store = DbStore()
    store.load(series, rows)
    out: list[dict] = [{} for _ in rows]
    for i in sorted(range(len(rows)), key=lambda i: (rows[i]["occurred_at"], i)):
        row = rows[i]
        out[i] = {key: compute(a, row, store, s) for key, a, s in readable}
        for s in series:
            store.add(s, row)
    store.flush()
    return out


def _series_of_all(aggs: list[rules.Aggregate]) -> list[Series]:
    return list({a.series_key: series_of(a) for a in aggs}.values())


def _observe_redis(rows: list[dict], aggs: list[rules.Aggregate]) -> list[dict]:
    """observe() on the Redis counters: one round trip for the rows (redis_store). A row the
    counters could not answer for (not built: Redis lost them) keeps no values: they are read
    when it is evaluated, from the counters as they stand then."""
    if not aggs:
        return [{} for _ in rows]
    series = {s.key: s for s in _series_of_all(aggs)}
    readable = [(a.key, a, series[a.series_key]) for a in aggs]
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["occurred_at"], i))
    answers = redis_store.exchange([rows[i] for i in order], readable, list(series.values()))
    out: list[dict] = [{} for _ in rows]
    for i, found in zip(order, answers, strict=True):
        if found is None:
            logger.warning("velocity counters not built in Redis: no values until aggregates_rebuild runs")
            continue
        out[i] = {key: compute(a, rows[i], found, s) for key, a, s in readable}
    return out


def forget(rows: list[dict], aggs: list[rules.Aggregate] | None = None) -> None:
    """Rows observed whose database transaction then failed: take them out of the Redis
    counters (the tables roll back with the transaction)."""
    if rows and redis_store.enabled():
        redis_store.undo(rows, _series_of_all(active_aggregates() if aggs is None else list(aggs)))


def value(agg: rules.Aggregate, row: dict, store: DbStore | None = None, *, counted: bool = False):
    """One aggregate for one row from the counters (one query, or one Redis round trip).
    `counted`: the row is stored, so already in the counters (see counters.compute)."""
    if redis_store.enabled() and store is None:
        series = series_of(agg)
        [found] = redis_store.exchange([row], [(agg.key, agg, series)], [series], count=False)
        return None if found is None else compute(agg, row, found, series, counted=counted)
    return compute(agg, row, store or DbStore(), counted=counted)


def with_aggregates(row: dict, snapshot: dict | None, aggs: list[rules.Aggregate]) -> dict:
    """For a stored transaction: an aggregate missing from its snapshot (a rule activated
    after it arrived) is read from the counters as they stand now, which count it already
    and may count transactions that arrived after it in the same buckets."""
    snapshot = dict(snapshot or {})
    for agg in aggs:
        if agg.key not in snapshot:
            snapshot[agg.key] = value(agg, row, counted=True)
    row["agg"] = snapshot
    return row


def replay(rows, aggs: list[rules.Aggregate]):
    """For rows in time order (an iterable), yield (row with row["agg"]) computed as the live
    counters would have: the back-test's replay, in memory."""
    store = MemoryStore()
    pairs = [(a.key, a, series_of(a)) for a in aggs]
    series = list({s.key: s for _, _, s in pairs}.values())
    for row in rows:
        row["agg"] = {key: compute(a, row, store, s) for key, a, s in pairs}
        for s in series:
            store.add(s, row)
        yield row


def _newest():
    from casework.transactions.models import Transaction

    return Transaction.objects.aggregate(newest=Max("occurred_at"))["newest"]


def prune(*, series_key: str | None = None) -> int:
    """Drop the buckets no window reads any more (older than their size's retention before the
    newest transaction). Returns the rows deleted."""
    if redis_store.enabled():
        return 0  # the Redis hashes are trimmed as they are written, and expire when idle
    newest = _newest()
    if newest is None:
        return 0
    deleted = 0
    for size, first in horizon(epoch(newest)).items():
        for model in (AggregateBucket, AggregateDistinct):
            rows = model.objects.filter(size=size, start__lt=first)
            if series_key:
                rows = rows.filter(series=series_key)
            deleted += rows.delete()[0]
    return deleted


@transaction.atomic
def series_build(series_row: AggregateSeries) -> int:
    """Recompute one series from the transactions of its retention (locked: ingest waits)."""
    from casework.transactions.models import Transaction

    series_row = AggregateSeries.objects.select_for_update().get(pk=series_row.pk)
    series = Series.of_definition(series_row.key, series_row.definition)
    if redis_store.enabled():
        # Once the approval commits, when the decisions count the new series too.
        transaction.on_commit(lambda: redis_store.series_build(series))
        series_row.built_at = timezone.now()
        series_row.save(update_fields=["built_at"])
        return 0
    AggregateBucket.objects.filter(series=series.key).delete()
    AggregateDistinct.objects.filter(series=series.key).delete()
    newest = _newest()
    count = 0
    if newest is not None:
        first = min(horizon(epoch(newest)).values())
        since = datetime.fromtimestamp(first, tz=UTC)
        store = MemoryStore()
        for values in (Transaction.objects.filter(occurred_at__gte=since).order_by("occurred_at", "pk")
                       .values_list(*rules.ROW_COLUMNS).iterator(chunk_size=5000)):
            store.add(series, rules.row_from_values(values))
            count += 1
        AggregateBucket.objects.bulk_create(
            [AggregateBucket(series=key, grp=g, size=size, start=start, n=n, cents=c)
             for key, g, size, start, n, c in store.rows()], batch_size=2000)
        AggregateDistinct.objects.bulk_create(
            [AggregateDistinct(series=key, grp=g, size=size, start=start, value=v)
             for key, g, size, start, v in store.distinct_rows()], batch_size=2000)
        prune(series_key=series.key)
    series_row.built_at = timezone.now()
    series_row.save(update_fields=["built_at"])
    return count


@transaction.atomic
def series_sync() -> dict:
    """Counters for exactly the series the active rules read (see the module)."""
    needed = {a.series_key: a.series for a in active_aggregates()}
    existing = {s.key: s for s in AggregateSeries.objects.select_for_update()}
    dropped = [key for key in existing if key not in needed]
    if dropped and redis_store.enabled():
        transaction.on_commit(lambda: redis_store.series_drop(dropped))
    if dropped:
        AggregateBucket.objects.filter(series__in=dropped).delete()
        AggregateDistinct.objects.filter(series__in=dropped).delete()
        AggregateSeries.objects.filter(key__in=dropped).delete()
    built = []
    for key, definition in needed.items():
        if key not in existing:
            row = AggregateSeries.objects.create(key=key, definition=definition, created_at=timezone.now())
            series_build(row)
            built.append(key)
    return {"built": built, "dropped": dropped}


def rebuild(*, grace: float | None = None) -> dict:
    """Every series recomputed from the transactions (after a restore, or to check). With the
    counters in Redis, a new generation built while decisions go on (redis_store.rebuild);
    returns {"redis": transactions counted} then."""
    if redis_store.enabled():
        series = _maintained(lock=False)
        return {"redis": redis_store.rebuild(series, grace=grace)}
    counts = {}
    for row in AggregateSeries.objects.order_by("key"):
        counts[row.key] = series_build(row)
    return counts


def ensure() -> bool:
    """With the counters in Redis: rebuild them if Redis lost them (the beat, every 30 s).
    True when a rebuild ran."""
    if not redis_store.enabled() or redis_store.ready():
        return False
    if not redis_store.client().set(redis_store.PREFIX + "rebuilding", "1", nx=True, ex=3600):
        return False  # another worker is at it
    try:
        rebuild()
    finally:
        redis_store.client().delete(redis_store.PREFIX + "rebuilding")
    return True


__all__ = ["SIZES", "active_aggregates", "ensure", "forget", "observe", "prune", "rebuild", "replay", "series_build", "series_sync",
           "value", "with_aggregates"]
