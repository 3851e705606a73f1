"""Export the access log of one person or one case as CSV (the admins' /audit/access.csv,
from the command line). The export is itself on record."""

from __future__ import annotations

import csv

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from casework.cases.access_log import access_csv_rows, access_export_entries, access_export_record_command
from casework.errors import error_text


class Command(BaseCommand):
    help = "Write the access log of a person (--user) and/or a case (--case) as CSV, oldest first."

    def add_arguments(self, parser):
        parser.add_argument("--user", default="", help="username")
        parser.add_argument("--case", default="", help="case reference, e.g. FRA-000123")
        parser.add_argument("--output", default="-", help="file to write (default: standard output)")

    def handle(self, *args, user: str, case: str, output: str, **options):
        try:
            entries, chosen = access_export_entries({"user": user, "case": case})
        except ValidationError as exc:
            raise CommandError(error_text(exc)) from exc
        access_export_record_command(chosen, via="export_access_log")
        if output == "-":
            self._write(self.stdout, entries)
            return
        with open(output, "w", newline="", encoding="utf-8") as out:
            count = self._write(out, entries)
        self.stderr.write(f"{count} access entries written to {output}.")

    @staticmethod
    def _write(out, entries) -> int:
        writer = csv.writer(out)
        rows = access_csv_rows(entries)
        writer.writerow(next(rows))
        count = 0
        for row in rows:
            writer.writerow(row)
            count += 1
        return count
