"""Recompute the velocity counters (casework.transactions.aggregates) from the transactions.

In the database they are kept in the same transaction as the transactions they count, so
they are never stale; this is for a restore from a backup that predates some rows, a
change of the bucket sizes, or to check: `--check` compares the rebuilt table with the
one it replaced and exits 1 on any difference. In Redis (TXN_AGGREGATES_REDIS_URL) it builds
a new generation while decisions go on (the beat does it by itself when Redis lost them);
`--check` compares the generations' buckets within their retention.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction


class Command(BaseCommand):
    help = "Rebuild the velocity counters from the transactions (and prune what no window reads)."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="Fail if the rebuilt counters differ.")

    def handle(self, *args, check: bool = False, **options):
        from casework.transactions.aggregates import rebuild, redis_store, series_sync
        from casework.transactions.aggregates.models import AggregateBucket, AggregateDistinct

        def table():
            if redis_store.enabled():
                return redis_store.snapshot()
            return (set(AggregateBucket.objects.values_list("series", "grp", "size", "start", "n", "cents")),
                    set(AggregateDistinct.objects.values_list("series", "grp", "size", "start", "value")))

        if redis_store.enabled():  # no database transaction around it: decisions go on meanwhile
            synced = series_sync()
            before = table() if check else None
            counts = rebuild()
            after = table() if check else None
        else:
            synced, before, counts, after = self._in_the_database(table, check)
        self._report(synced, counts, check, before, after)

    def _in_the_database(self, table, check):
        from casework.transactions.aggregates import prune, rebuild, series_sync

        with transaction.atomic():
            synced = series_sync()
            prune()
            before = table() if check else None
            counts = rebuild()
            after = table() if check else None
        return synced, before, counts, after

    def _report(self, synced, counts, check, before, after):
        for key, n in counts.items():
            self.stdout.write(f"series {key}: {n} transactions counted")
        if synced["built"] or synced["dropped"]:
            self.stdout.write(f"series built: {synced['built']}, dropped: {synced['dropped']}")
        if check and before != after:
            missing, extra = before[0] - after[0], after[0] - before[0]
            raise CommandError(f"The counters differed from the transactions: {len(missing)} bucket rows changed "
                               f"or dropped, {len(extra)} new; distinct values {len(before[1] ^ after[1])} differ.")
        if check:
            self.stdout.write("The counters matched the transactions.")
