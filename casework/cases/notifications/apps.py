from __future__ import annotations

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "casework.cases.notifications"
    label = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        from casework.cases.navigation import nav_read_register, nav_watch
        from casework.cases.notifications import receivers  # noqa: F401 - connects the signal receivers
        from casework.cases.notifications.models import Notification
        from casework.cases.notifications.selectors import unread_count

        # The navigation's unread badge, one person's: it changes with their notifications.
        nav_read_register("unread", unread_count)
        nav_watch(Notification, uid="notification", person="recipient_user_id")

        from casework.cases.dashboard.demo import demo_load_workbench
        from casework.cases.demo import demo_register_last

        # The demo's workbench history ends in deadlines and notifications; the dashboard,
        # whose history it is, has no app of its own to register it from.
        demo_register_last(demo_load_workbench)
