from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from casework.support.csv_io import CsvRefused, import_customers, import_kb_articles


class Command(BaseCommand):
    help = "Import customers and/or knowledge-base articles from CSV (each file all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("--customers", help="CSV: " + "customer_id,name,email,plan,tenure_months,seats,region,vip")
        parser.add_argument("--kb", help="CSV: article_id,title,category,body")

    def handle(self, *args, customers=None, kb=None, **options):
        if not customers and not kb:
            raise CommandError("Give --customers and/or --kb.")
        for path, importer, label in ((customers, import_customers, "customers"), (kb, import_kb_articles, "articles")):
            if not path:
                continue
            try:
                with open(path, "rb") as file:
                    count = importer(actor="system", file=file)
            except CsvRefused as exc:
                raise CommandError(f"{path} refused, nothing imported:\n  " + "\n  ".join(exc.errors)) from None
            except OSError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(self.style.SUCCESS(f"{count} {label} imported from {path}."))
