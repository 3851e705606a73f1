"""The restore drill's check: after restoring a backup (README, "Backup and restore"), is the
copy whole? The audit chain, the chain against the signed checkpoints kept outside the
database, and every evidence file against the SHA-256 recorded when it was uploaded."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from audit.checkpoint_services import audit_verify_checkpoints, checkpoints_read_dir
from audit.checkpoints import CheckpointError, keyring, keyring_read
from audit.services import audit_verify_chain
from casework.cases.attachments.models import Attachment
from casework.cases.attachments.services import attachment_stored_sha256

NAMED = 20  # how many failing evidence files the message names


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

        checked, bad = 0, []
        for attachment in Attachment.objects.select_related("case").order_by("id").iterator(chunk_size=500):
            checked += 1
            found = attachment_stored_sha256(attachment)
            if found != attachment.sha256:
                what = "missing" if found is None else f"SHA-256 {found}, recorded {attachment.sha256}"
                bad.append(f"{attachment.case.reference}/{attachment.original_name} ({attachment.file.name}): {what}")
        if bad:
            problems.append(f"{len(bad)} of {checked} evidence files do not match their recorded hash: "
                            + "; ".join(bad[:NAMED]) + ("; ..." if len(bad) > NAMED else "") + ".")
        else:
            self.stdout.write(f"Evidence files: {checked} match their recorded SHA-256.")

        if problems:
            raise CommandError("Restore check failed.\n" + "\n".join(problems))
        self.stdout.write(self.style.SUCCESS("Restore verified: chain, checkpoints and evidence files all match."))


def _configured_keys():
    return keyring()
