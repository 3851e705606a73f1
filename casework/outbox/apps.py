from __future__ import annotations

from django.apps import AppConfig


class OutboxConfig(AppConfig):
    name = "casework.outbox"
    label = "outbox"
    verbose_name = "Outgoing webhooks"

    def ready(self) -> None:
        from casework.ops.metrics import metric_families_register
        from casework.outbox.metrics import outbox_metric_families

        # The deliveries by state and the oldest pending one's age, on /metrics.
        metric_families_register(outbox_metric_families)
