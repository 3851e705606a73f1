from __future__ import annotations

import csv
import json

from django.core.management.base import BaseCommand

from audit.models import AuditEntry

COLUMNS = [
    "id", "timestamp", "actor", "actor_type", "actor_user_id", "action", "case_id", "case_ref",
    "object_type", "object_id", "correlation_id", "data", "prev_hash", "hash",
]


class Command(BaseCommand):
    help = "Write the whole audit trail, in chain order, to a CSV file."

    def add_arguments(self, parser):
        parser.add_argument("path", help="CSV file to write")

    def handle(self, *args, path: str, **options):
        count = 0
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(COLUMNS)
            for entry in AuditEntry.objects.order_by("id").iterator(chunk_size=2000):
                row = [getattr(entry, c) for c in COLUMNS]
                row[1] = entry.timestamp.isoformat()
                row[11] = json.dumps(entry.data, sort_keys=True)
                writer.writerow(row)
                count += 1
        self.stdout.write(self.style.SUCCESS(f"Wrote {count} audit entries to {path}."))
