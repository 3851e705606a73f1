"""manage.py import_transactions FILE.csv: card history from a CSV file, all or nothing."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from casework.transactions.data_io import error_lines, import_csv


class Command(BaseCommand):
    help = "Import card transactions from a CSV file (see casework/transactions/data_io.py for the columns)."

    def add_arguments(self, parser):
        parser.add_argument("path")

    def handle(self, *args, path: str, **options):
        try:
            created = import_csv(actor="system", text=Path(path).read_text(encoding="utf-8-sig"), via="csv_command")
        except ValidationError as exc:
            raise CommandError("\n".join(error_lines(exc)))
        self.stdout.write(self.style.SUCCESS(f"Imported {len(created)} transactions."))
