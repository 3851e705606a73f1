from __future__ import annotations

from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "casework.ops"
    label = "ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        from django.core.signals import got_request_exception

        from casework.db_transient import note_transient_error
        from casework.ops import metrics

        metrics.register_collectors()
        got_request_exception.connect(note_transient_error, dispatch_uid="casework.db_transient")
