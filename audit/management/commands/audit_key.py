from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from audit.checkpoints import CheckpointError, current_key, keyring, keyring_read, signing_key_generate


class Command(BaseCommand):
    help = (
        "Show the audit checkpoints' public key (key id, signed-note verifier key, PEM) and the keyring; "
        "or, with --generate PATH, write a new Ed25519 signing key to PATH (mode 0600, never overwritten)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--generate", metavar="PATH", help="Write a new private key (PEM) to PATH.")
        parser.add_argument("--vkey", action="store_true",
                            help="Print only the current key's verifier key line (for the keyring file).")
        parser.add_argument("--retire", action="store_true",
                            help="Add the current key's verifier key to AUDIT_CHECKPOINT_KEYRING (before a rotation), "
                                 "so that the checkpoints it signed keep verifying.")

    def handle(self, *args, generate: str | None = None, vkey: bool = False, retire: bool = False, **options):
        if generate:
            path = Path(generate)
            if path.exists():
                raise CommandError(f"{path} exists; a signing key is never overwritten (see README: key rotation).")
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(signing_key_generate())
            self.stdout.write(self.style.SUCCESS(f"Wrote a new Ed25519 signing key to {path}."))
            return
        try:
            current = current_key()
            keys = keyring()
        except CheckpointError as exc:
            raise CommandError(str(exc))
        if current is None:
            raise CommandError("No signing key: set AUDIT_SIGNING_KEY (a PEM or base64 key, or a file's path).")
        if vkey:
            self.stdout.write(current.vkey)
            return
        if retire:
            path = Path(settings.AUDIT_CHECKPOINT_KEYRING)
            if path.is_file() and current in keyring_read(path):
                self.stdout.write(f"{path} already holds key {current.key_id}.")
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(f"# key {current.key_id}, retired {timezone.now():%Y-%m-%d %H:%M} UTC\n{current.vkey}\n")
            self.stdout.write(self.style.SUCCESS(
                f"Added key {current.key_id} to {path}. Now point AUDIT_SIGNING_KEY at a new key "
                "(audit_key --generate PATH) and restart web, workers and beat."))
            return
        self.stdout.write(f"Key id (SHA-256 of the public key): {current.key_id}")
        self.stdout.write(f"Verifier key: {current.vkey}")
        self.stdout.write(current.pem.rstrip())
        retired = [k for k in keys if k != current]
        self.stdout.write(f"Keyring: {len(retired)} retired key(s)")
        for key in retired:
            self.stdout.write(f"  {key.key_id}  {key.vkey}")
