from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from audit.checkpoints import CheckpointError, current_key, keyring, signing_key_generate


class Command(BaseCommand):
    help = (
        "Show the audit checkpoints' public key (key id, signed-note verifier key, PEM) and the keyring; "
        "or, with --generate PATH, write a new Ed25519 signing key to PATH (mode 0600, never overwritten)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--generate", metavar="PATH", help="Write a new private key (PEM) to PATH.")
        parser.add_argument("--vkey", action="store_true",
                            help="Print only the current key's verifier key line (for the keyring file).")

    def handle(self, *args, generate: str | None = None, vkey: bool = False, **options):
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
        self.stdout.write(f"Key id (SHA-256 of the public key): {current.key_id}")
        self.stdout.write(f"Verifier key: {current.vkey}")
        self.stdout.write(current.pem.rstrip())
        retired = [k for k in keys if k != current]
        self.stdout.write(f"Keyring: {len(retired)} retired key(s)")
        for key in retired:
            self.stdout.write(f"  {key.key_id}  {key.vkey}")
