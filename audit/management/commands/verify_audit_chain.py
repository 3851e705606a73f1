from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audit.services import audit_verify_chain


class Command(BaseCommand):
    help = "Check the audit trail's hash chain; exit non-zero naming the first broken entry."

    def handle(self, *args, **options):
        checked, broken, why = audit_verify_chain()
        if broken is not None:
            raise CommandError(
                f"Audit chain broken at entry #{broken.pk} ({broken.timestamp:%Y-%m-%d %H:%M:%S} "
                f"{broken.actor} {broken.action}): {why}. {checked} entries before it are intact."
            )
        self.stdout.write(self.style.SUCCESS(f"Audit chain intact: {checked} entries verified."))
