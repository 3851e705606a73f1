from __future__ import annotations

from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "casework.ops"
    label = "ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        from casework.ops import metrics

        metrics.register_collectors()
