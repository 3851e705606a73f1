"""The restore drill's check: after restoring a backup (README, "Backup and restore"), is the
copy whole? The audit chain, the chain against the signed checkpoints kept outside the
database, and what the apps registered (casework/ops/restore_checks.py): every evidence file
against the SHA-256 recorded when it was uploaded."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from audit.checkpoint_services import audit_verify_checkpoints, checkpoints_read_dir
from audit.checkpoints import CheckpointError, keyring, keyring_read
from audit.services import audit_verify_chain
from casework.ops.restore_checks import RESTORE_CHECKS


class Command(BaseCommand):
    help = (
        "Check a restored database and media: the audit chain, the chain against the signed checkpoints "
        "(--checkpoints DIR, default AUDIT_CHECKPOINT_DIR), and every evidence file against its recorded SHA-256. "
        "Reads only; exits non-zero naming what does not match."
    )

    def add_arguments(self, parser):
        parser.add_argument("--checkpoints", metavar="DIR", default=None,
                            help="Signed checkpoints kept outside the database (default AUDIT_CHECKPOINT_DIR).")
        parser.add_argument("--keyring", metavar="FILE",
                            help="Trust the keys in FILE instead of the configured key and AUDIT_CHECKPOINT_KEYRING.")

    def handle(self, *args, checkpoints: str | None = None, keyring: str | None = None, **options):
        problems: list[str] = []

        chain = audit_verify_chain()
        if chain.broken is not None:
            problems.append(f"Audit chain broken at position {chain.broken.position} (entry #{chain.broken.pk}): "
                            f"{chain.why}.")
        else:
            self.stdout.write(f"Audit chain intact: {chain.checked} entries, {chain.pending} pending.")

        directory = checkpoints or str(settings.AUDIT_CHECKPOINT_DIR)
        try:
            keys = keyring_read(keyring) if keyring else _configured_keys()
            files = checkpoints_read_dir(directory)
        except (CheckpointError, OSError) as exc:
            problems.append(f"Checkpoints: {exc}.")
        else:
            if not files:
                problems.append(f"No checkpoints in {directory}: nothing outside the database vouches for the chain.")
            else:
                check = audit_verify_checkpoints(files, keys)
                if check.ok:
                    self.stdout.write(f"Checkpoints agree: {check.matched} signed checkpoint(s), up to position "
                                      f"{check.last_good}.")
                else:
                    problems.append(check.problem)

        # What the apps registered (casework/ops/restore_checks.py): the evidence files.
        for check in RESTORE_CHECKS:
            ok, text = check()
            if ok:
                self.stdout.write(text)
            else:
                problems.append(text)

        if problems:
            raise CommandError("Restore check failed.\n" + "\n".join(problems))
        self.stdout.write(self.style.SUCCESS("Restore verified: chain, checkpoints and evidence files all match."))


def _configured_keys():
    return keyring()
