from __future__ import annotations

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "casework.cases.notifications"
    label = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        from casework.cases.notifications import receivers  # noqa: F401 - connects the signal receivers
