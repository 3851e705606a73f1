from __future__ import annotations

import csv
import json

from django.core.management.base import BaseCommand
from django.db.models import F

from audit.models import AuditEntry
from audit.services import audit_sequence

COLUMNS = [
    "position", "id", "timestamp", "actor", "actor_type", "actor_user_id", "action", "case_id", "case_ref",
    "object_type", "object_id", "correlation_id", "data", "scheme", "salt", "payload_digest", "tombstone",
    "prev_hash", "hash",
]


class Command(BaseCommand):
    help = (
        "Write the whole audit trail to a CSV file: the chain in position order, then entries "
        "still pending (empty position and hashes) in id order."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="CSV file to write")
        parser.add_argument(
            "--no-sequence", action="store_true",
            help="Export as it stands: do not link committed pending entries first.",
        )

    def handle(self, *args, path: str, no_sequence: bool = False, **options):
        if not no_sequence:
            audit_sequence()
        count = pending = 0
        entries = AuditEntry.objects.order_by(F("position").asc(nulls_last=True), "id")
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(COLUMNS)
            for entry in entries.iterator(chunk_size=2000):
                row = {c: getattr(entry, c) for c in COLUMNS}
                row["timestamp"] = entry.timestamp.isoformat()
                row["data"] = json.dumps(entry.data, sort_keys=True)
                # csv writes None as "", which is how a pending entry's position and hashes read.
                writer.writerow([row[c] for c in COLUMNS])
                count += 1
                pending += not entry.sequenced
        note = f" ({pending} pending, not yet chained)" if pending else ""
        self.stdout.write(self.style.SUCCESS(f"Wrote {count} audit entries to {path}{note}."))
