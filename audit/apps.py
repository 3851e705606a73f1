from __future__ import annotations

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit trail"

    def ready(self) -> None:
        from audit.tracing import instrument_django

        # Here, before any handler loads MIDDLEWARE: the instrumentation adds its middleware to it.
        instrument_django()
