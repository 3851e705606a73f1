from __future__ import annotations

from django.core.management.base import BaseCommand

from casework.access.data_io import access_data_export


class Command(BaseCommand):
    help = "Export access reference data, HR mutations, their status history and requests as CSV files into DIR."

    def add_arguments(self, parser):
        parser.add_argument("directory")

    def handle(self, *args, **options):
        counts = access_data_export(options["directory"])
        for name, count in counts.items():
            self.stdout.write(f"{name}: {count} row(s)")
        self.stdout.write(self.style.SUCCESS(f"Exported to {options['directory']}."))
