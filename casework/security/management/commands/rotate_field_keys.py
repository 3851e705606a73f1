from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from casework.security.encryption import FieldDecryptionError, field_key_generate, field_keys_rotate


class Command(BaseCommand):
    help = (
        "Re-encrypt every encrypted field (webhook secrets, absence details) under the newest key of "
        "FIELD_ENCRYPTION_KEYS, audited. Rotation: put a new key first in FIELD_ENCRYPTION_KEYS, keep the old "
        "ones, run this, then drop the old ones. With --generate, print a new key and change nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--generate", action="store_true", help="Print a new Fernet key and exit.")
        parser.add_argument("--batch", type=int, default=500, help="Rows per transaction (500).")

    def handle(self, *args, generate: bool = False, batch: int = 500, **options):
        if generate:
            self.stdout.write(field_key_generate())
            return
        if batch < 1:
            raise CommandError("--batch must be at least 1.")
        try:
            counts = field_keys_rotate(actor="system", batch=batch)
        except FieldDecryptionError as exc:
            raise CommandError(str(exc)) from None
        for name, count in counts.items():
            self.stdout.write(f"{name}: {count} value(s)")
        self.stdout.write(self.style.SUCCESS(
            f"Re-encrypted {sum(counts.values())} value(s) under the newest key; the older keys can now be dropped."))
