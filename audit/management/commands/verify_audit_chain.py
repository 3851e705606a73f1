from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audit.services import audit_sequence, audit_verify_chain


class Command(BaseCommand):
    help = (
        "Link committed pending audit entries into the chain, then check the hash chain; "
        "exit non-zero naming the first broken entry."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-sequence", action="store_true",
            help="Check the chain as it stands: do not link pending entries first.",
        )

    def handle(self, *args, no_sequence: bool = False, **options):
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
