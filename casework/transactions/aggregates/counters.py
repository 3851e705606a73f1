"""Counter stores and the computation of an aggregate's value for one transaction.

MemoryStore keeps buckets in dictionaries (the back-test's replay, and the rebuild);
DbStore reads and writes the AggregateBucket / AggregateDistinct tables. Both answer the same
two questions over the same buckets (casework.transactions.aggregates.buckets.cover), so the
live counters and a replay give the same values for the same sequence of transactions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import reduce
from operator import or_

from django.db import connection
from django.db.models import Q

from casework.transactions import rules
from casework.transactions.aggregates.buckets import RETENTION, SIZES, cover, epoch, starts
from casework.transactions.aggregates.models import AggregateBucket, AggregateDistinct

# A distinct count reads at most this many (bucket, value) rows: it is exact up to about
# this many values (rules compare distinct counts with small numbers: a third device).
DISTINCT_READ_CAP = 5000
# Bucket rows per upsert statement (6 parameters each: within SQLite's 32,766).
UPSERT_ROWS = 500


@dataclass(frozen=True)
class Series:
    key: str
    by: str
    where: tuple
    of: str | None

    @classmethod
    def of_definition(cls, key: str, definition: dict) -> Series:
        where = tuple(rules.Condition.model_validate(c) for c in definition.get("where") or [])
        return cls(key=key, by=definition["by"], where=where, of=definition.get("of"))

    def group(self, row: dict) -> str | None:
        return row.get(rules.GROUPS[self.by])

    def counts(self, row: dict) -> bool:
        return self.group(row) is not None and all(rules.holds_plain(c, row) for c in self.where)

    def value(self, row: dict) -> str | None:
        if self.of is None:
            return None
        value = row.get(rules.DISTINCT[self.of])
        return None if value in (None, "") else str(value)[:160]


def series_of(agg: rules.Aggregate) -> Series:
    return Series.of_definition(agg.series_key, agg.series)


def cents_of(row: dict) -> int:
    return int((Decimal(str(row["amount"])) * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


class MemoryStore:
    """Buckets per (series, group, size): start -> [count, cents], and start -> distinct values."""

    def __init__(self) -> None:
        self.buckets: dict[tuple, dict[int, list[int]]] = defaultdict(dict)
        self.values: dict[tuple, dict[int, set[str]]] = defaultdict(dict)

    def add(self, series: Series, row: dict) -> None:
        if not series.counts(row):
            return
        group, cents, value = series.group(row), cents_of(row), series.value(row)
        for size, start in starts(epoch(row["occurred_at"])):
            bucket = self.buckets[(series.key, group, size)].setdefault(start, [0, 0])
            bucket[0] += 1
            bucket[1] += cents
            if value is not None:
                self.values[(series.key, group, size)].setdefault(start, set()).add(value)

    @staticmethod
    def _in(kept: dict, size: int, first: int, last: int):
        """The kept buckets within [first, last]: by the range or by what is kept, the shorter."""
        if len(kept) < (last - first) // size + 1:
            return [b for start, b in kept.items() if first <= start <= last]
        return [b for b in (kept.get(start) for start in range(first, last + 1, size)) if b is not None]

    def totals(self, series_key: str, group: str, ranges) -> tuple[int, int]:
        n = cents = 0
        for size, first, last in ranges:
            kept = self.buckets.get((series_key, group, size))
            if kept:
                for bucket in self._in(kept, size, first, last):
                    n, cents = n + bucket[0], cents + bucket[1]
        return n, cents

    def distinct(self, series_key: str, group: str, ranges) -> set[str]:
        seen: set[str] = set()
        for size, first, last in ranges:
            kept = self.values.get((series_key, group, size))
            if kept:
                for values in self._in(kept, size, first, last):
                    seen |= values
        return seen

    def distinct_count(self, series_key: str, group: str, ranges, value) -> tuple[int, bool]:
        """How many distinct values the window holds, and whether `value` is one of them."""
        values = self.distinct(series_key, group, ranges)
        return len(values), value in values

    def rows(self):
        """(series, group, size, start, count, cents) of every bucket kept."""
        for (key, group, size), kept in self.buckets.items():
            for start, (n, cents) in kept.items():
                if n:
                    yield key, group, size, start, n, cents

    def distinct_rows(self):
        for (key, group, size), kept in self.values.items():
            for start, values in kept.items():
                for value in values:
                    yield key, group, size, start, value


def _in_ranges(ranges) -> Q:
    return reduce(or_, (Q(size=size, start__gte=first, start__lte=last) for size, first, last in ranges))


class DbStore(MemoryStore):
    """The tables, with an overlay for a batch: `load` reads the buckets the batch's reads can
    touch (one query per series and 500 groups), `add` counts in memory, `flush` writes the
    increments (an upsert that adds, so concurrent batches add up)."""

    def __init__(self) -> None:
        super().__init__()
        self.delta: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
        self.new_values: set[tuple] = set()
        self.loaded: set[tuple[str, str]] = set()
        self.rows_read = 0

    def load(self, series: list[Series], rows: list[dict]) -> None:
        """Read the buckets these rows' reads can touch: for every series, the groups the rows
        belong to, within the retention before the oldest row (one query for the counts and one
        for the distinct values, per 500 (series, group) pairs)."""
        if not rows:
            return
        times = [epoch(r["occurred_at"]) for r in rows]
        low, high = min(times), max(times)
        window = reduce(or_, (Q(size=size, start__gte=(low - keep) // size * size, start__lte=high)
                              for size, keep in RETENTION.items()))
        pairs = sorted({(s.key, g, s.of is not None) for s in series for g in (s.group(r) for r in rows)
                        if g is not None and (s.key, g) not in self.loaded})
        for i in range(0, len(pairs), 500):
            chunk = pairs[i:i + 500]
            which = reduce(or_, (Q(series=key, grp=g) for key, g, _ in chunk))
            for key, grp, size, start, n, cents in (AggregateBucket.objects.filter(window, which)
                                                    .values_list("series", "grp", "size", "start", "n", "cents")):
                self.buckets[(key, grp, size)][start] = [n, cents]
                self.rows_read += 1
            distinct = [(key, g) for key, g, has in chunk if has]
            if distinct:
                which = reduce(or_, (Q(series=key, grp=g) for key, g in distinct))
                for key, grp, size, start, value in (AggregateDistinct.objects.filter(window, which)
                                                     .values_list("series", "grp", "size", "start", "value")):
                    self.values[(key, grp, size)].setdefault(start, set()).add(value)
                    self.rows_read += 1
            self.loaded |= {(key, g) for key, g, _ in chunk}

    def add(self, series: Series, row: dict) -> None:
        super().add(series, row)
        if not series.counts(row):
            return
        group, cents, value = series.group(row), cents_of(row), series.value(row)
        for size, start in starts(epoch(row["occurred_at"])):
            key = (series.key, group, size, start)
            self.delta[key][0] += 1
            self.delta[key][1] += cents
            if value is not None:
                self.new_values.add((*key, value))

    def totals(self, series_key: str, group: str, ranges) -> tuple[int, int]:
        if (series_key, group) in self.loaded:
            return super().totals(series_key, group, ranges)
        rows = list(AggregateBucket.objects.filter(_in_ranges(ranges), series=series_key, grp=group)
                    .values_list("n", "cents"))
        self.rows_read += len(rows)
        return sum(r[0] for r in rows), sum(r[1] for r in rows)

    def distinct(self, series_key: str, group: str, ranges) -> set[str]:
        if (series_key, group) in self.loaded:
            return super().distinct(series_key, group, ranges)
        values = list(AggregateDistinct.objects.filter(_in_ranges(ranges), series=series_key, grp=group)
                      .values_list("value", flat=True)[:DISTINCT_READ_CAP])
        self.rows_read += len(values)
        return set(values)

    def flush(self) -> None:
        """Write the increments, in key order (two batches never wait on each other in a circle)."""
        if self.delta:
            table = AggregateBucket._meta.db_table
            rows = [(*key, n, cents) for key, (n, cents) in sorted(self.delta.items())]
            upsert = (f"ON CONFLICT (series, grp, size, start) DO UPDATE SET n = {table}.n + excluded.n, "
                      f"cents = {table}.cents + excluded.cents")
            with connection.cursor() as cursor:
                # Many rows per statement (each key once: the deltas are summed per key).
                for i in range(0, len(rows), UPSERT_ROWS):
                    chunk = rows[i:i + UPSERT_ROWS]
                    if connection.vendor == "postgresql":  # one array per column: a short statement
                        cursor.execute(
                            f"INSERT INTO {table} (series, grp, size, start, n, cents) SELECT * FROM unnest("
                            "%s::varchar[], %s::varchar[], %s::integer[], %s::bigint[], %s::integer[], %s::bigint[]) "
                            + upsert, [list(column) for column in zip(*chunk, strict=True)])
                    else:
                        values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(chunk))
                        cursor.execute(f"INSERT INTO {table} (series, grp, size, start, n, cents) VALUES {values} "
                                       + upsert, [v for row in chunk for v in row])
        if self.new_values:
            AggregateDistinct.objects.bulk_create(
                [AggregateDistinct(series=s, grp=g, size=size, start=start, value=v)
                 for s, g, size, start, v in sorted(self.new_values)], ignore_conflicts=True, batch_size=1000)
        self.delta.clear()
        self.new_values.clear()


def compute(agg: rules.Aggregate, row: dict, store: MemoryStore, series: Series | None = None, *,
            counted: bool = False):
    """The aggregate's value for this transaction: the counters as they stand (everything
    observed before it) over the window ending with it, plus the transaction itself when
    `current` and it passes the filters. None when it has no value for the group, and for
    an average over nothing. `counted`: the row is in the counters already (a stored
    transaction read later): it is not added again, and taken out for `current: false`
    (except from a distinct count, whose set cannot tell its value from another's)."""
    series = series or series_of(agg)
    group = series.group(row)
    if group is None:
        return None
    ranges = cover(epoch(row["occurred_at"]), agg.seconds)
    mine = series.counts(row)
    if agg.fn == "count_distinct":
        value = series.value(row)
        count, seen = store.distinct_count(series.key, group, ranges, value)
        if agg.current and mine and not counted and value is not None and not seen:
            count += 1
        return count
    n, cents = store.totals(series.key, group, ranges)
    if mine and agg.current and not counted:
        n, cents = n + 1, cents + cents_of(row)
    elif mine and not agg.current and counted:
        n, cents = n - 1, cents - cents_of(row)
    if agg.fn == "count":
        return n
    if agg.fn == "sum":
        return cents / 100
    return round(cents / 100 / n, 2) if n else None


__all__ = ["DISTINCT_READ_CAP", "SIZES", "DbStore", "MemoryStore", "Series", "compute", "series_of"]
