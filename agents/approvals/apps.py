from __future__ import annotations

from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "agents.approvals"
    label = "approvals"
    verbose_name = "Approvals of what agents do"

    def ready(self) -> None:
        from django.core import checks

        from agents.approvals import receivers  # noqa: F401 - tell the case's people a run waits
        from agents.approvals.checks import tool_consequences_check

        checks.register(tool_consequences_check, "agents")
