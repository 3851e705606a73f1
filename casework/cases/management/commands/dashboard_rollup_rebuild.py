"""Recount the dashboard's roll-ups from the cases and decisions (casework/cases/dashboard/rollup.py):
after data was loaded behind the services' back (a restore, a bulk import of decisions)."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Recount the dashboard's counters (cases per day, open cases, decisions per day and verdict)."

    def handle(self, *args, **options):
        from casework.cases.dashboard.rollup import rollup_recount

        written = rollup_recount()
        self.stdout.write(", ".join(f"{name}: {n} rows" for name, n in written.items()))
