from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audit.checkpoint_services import audit_checkpoint_publish
from audit.checkpoints import CheckpointError


class Command(BaseCommand):
    help = (
        "Sign the audit chain's head and publish it (storage, webhook) when a checkpoint is due "
        "(AUDIT_CHECKPOINT_EVERY_ENTRIES / _MINUTES); --force publishes now unless the head is already signed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="Publish now, due or not.")

    def handle(self, *args, force: bool = False, **options):
        try:
            published = audit_checkpoint_publish(force=force)
        except CheckpointError as exc:
            raise CommandError(str(exc))
        if published.signed is None:
            self.stdout.write(f"No checkpoint published: {published.why}.")
        else:
            c = published.signed.checkpoint
            self.stdout.write(self.style.SUCCESS(
                f"Checkpoint published: position {c.position}, head {c.head_hash}, {c.time:%Y-%m-%d %H:%M:%S} UTC "
                f"({published.why}); file {c.file_name}."))
        if published.webhook:
            self.stdout.write(published.webhook[:1].upper() + published.webhook[1:] + ".")
