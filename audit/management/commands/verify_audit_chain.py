from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audit.checkpoint_services import audit_verify_checkpoints, checkpoints_read_dir
from audit.checkpoints import CheckpointError, keyring, keyring_read, public_key_parse
from audit.services import audit_sequence, audit_verify_chain


class Command(BaseCommand):
    help = (
        "Link committed pending audit entries into the chain, then check the hash chain; "
        "exit non-zero naming the first broken entry. With --checkpoints DIR, also check the chain "
        "against the signed checkpoints in DIR (a rewrite with recomputed hashes, a truncation)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-sequence", action="store_true",
            help="Check the chain as it stands: do not link pending entries first.",
        )
        parser.add_argument("--checkpoints", metavar="DIR",
                            help="A directory of signed checkpoints (AUDIT_CHECKPOINT_DIR, or copies of it).")
        parser.add_argument("--keyring", metavar="FILE",
                            help="Trust the keys in FILE instead of the configured key and AUDIT_CHECKPOINT_KEYRING.")
        parser.add_argument("--key", action="append", default=[], metavar="KEY",
                            help="Also trust this public key (verifier key, PEM or base64; repeatable).")

    def handle(self, *args, no_sequence: bool = False, checkpoints: str | None = None,
               keyring: str | None = None, key: list[str] | None = None, **options):
        if not no_sequence:
            linked = audit_sequence()
            if linked:
                self.stdout.write(f"Linked {linked} pending entries into the chain.")
        result = audit_verify_chain()
        if result.broken is not None:
            broken = result.broken
            raise CommandError(
                f"Audit chain broken at entry #{broken.pk}, position {broken.position} "
                f"({broken.timestamp:%Y-%m-%d %H:%M:%S} {broken.actor} {broken.action}): {result.why}. "
                f"{result.checked} entries before it are intact; {result.pending} pending."
            )
        self.stdout.write(self.style.SUCCESS(
            f"Audit chain intact: {result.checked} entries verified, {result.pending} pending."
        ))
        if checkpoints:
            self._against_checkpoints(checkpoints, keyring, key or [])

    def _against_checkpoints(self, directory: str, keyring_file: str | None, extra: list[str]) -> None:
        try:
            keys = keyring_read(keyring_file) if keyring_file else keyring()
            keys += [public_key_parse(k) for k in extra]
            files = checkpoints_read_dir(directory)
        except (CheckpointError, OSError) as exc:
            raise CommandError(str(exc))
        if not files:
            raise CommandError(f"No checkpoints in {directory}: nothing vouches for the chain.")
        check = audit_verify_checkpoints(files, keys)
        if not check.ok:
            raise CommandError(check.problem)
        self.stdout.write(self.style.SUCCESS(
            f"Checkpoints agree: {check.matched} signed checkpoint(s) match the chain, up to position "
            f"{check.last_good}."))
