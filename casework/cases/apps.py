from __future__ import annotations

from django.apps import AppConfig


class CasesConfig(AppConfig):
    name = "casework.cases"
    label = "cases"
    verbose_name = "Cases"

    def ready(self) -> None:
        from django.core import checks

        from casework.cases.checks import case_sla_check

        checks.register(case_sla_check)

        from casework.cases.lifecycle import lifecycle_register
        from casework.cases.lifecycle.case import CASE_LIFECYCLE

        lifecycle_register(CASE_LIFECYCLE)

        from casework.cases.navigation import nav_connect

        nav_connect()
