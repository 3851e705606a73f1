from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from casework.fraud.csv_import import LINE_NOTE, CsvRefused, import_alerts_csv


class Command(BaseCommand):
    help = ("Import fraud alerts from a CSV file (header: account_id, the 13 feature columns, optionally the "
            "five score columns). A file with any invalid row imports nothing unless --skip-invalid is given.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path to the CSV file (UTF-8).")
        parser.add_argument("--skip-invalid", action="store_true",
                            help="Import the valid rows and report the invalid ones as skipped.")
        parser.add_argument("--user", default="",
                            help="Username recorded as the importer in the audit trail (default: system).")

    def handle(self, *args, **options):
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file.")
        actor = "system"
        if options["user"]:
            actor = User.objects.filter(username=options["user"]).first()
            if actor is None:
                raise CommandError(f"No user named {options['user']!r}.")
        try:
            report = import_alerts_csv(actor=actor, data=path.read_bytes(),
                                       skip_invalid=options["skip_invalid"], via="csv_command")
        except CsvRefused as exc:
            for error in exc.errors:
                self.stderr.write(f"{path}: {error}")
            raise CommandError(f"{path}: nothing imported.") from None

        prefix = "Skipped " if not report.refused else ""
        for error in report.errors:
            (self.stderr if report.refused else self.stdout).write(f"{prefix}{path}: {error}")
        if report.errors:
            (self.stderr if report.refused else self.stdout).write(LINE_NOTE)
        if report.refused:
            raise CommandError(f"{report.summary()} Fix them, or run with --skip-invalid to import the rest.")
        if not report.created:
            raise CommandError(f"{path}: no valid rows; nothing imported.")
        self.stdout.write(self.style.SUCCESS(report.summary()))
        first, last = report.created[0].case.reference, report.created[-1].case.reference
        self.stdout.write(f"Cases {first} to {last}." if first != last else f"Case {first}.")
