from __future__ import annotations

from django.apps import AppConfig


class SecurityConfig(AppConfig):
    name = "casework.security"
    label = "security"
    verbose_name = "Security: API tokens, sign-ins, lockouts"

    def ready(self) -> None:
        from casework.security import signals  # noqa: F401 - connects the audit receivers
