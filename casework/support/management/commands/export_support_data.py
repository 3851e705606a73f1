from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from casework.support.csv_io import export_customers, export_kb_articles


class Command(BaseCommand):
    help = "Export customers and/or knowledge-base articles to CSV (the import's format)."

    def add_arguments(self, parser):
        parser.add_argument("--customers", help="Path of the customers CSV to write.")
        parser.add_argument("--kb", help="Path of the articles CSV to write.")

    def handle(self, *args, customers=None, kb=None, **options):
        if not customers and not kb:
            raise CommandError("Give --customers and/or --kb.")
        for path, exporter, label in ((customers, export_customers, "customers"), (kb, export_kb_articles, "articles")):
            if path:
                with open(path, "w", newline="", encoding="utf-8") as out:
                    count = exporter(out)
                self.stdout.write(self.style.SUCCESS(f"{count} {label} written to {path}."))
