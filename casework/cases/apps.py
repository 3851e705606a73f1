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

        from casework.cases import receivers  # noqa: F401 - a deactivated person's cases go back to the queue
        from casework.cases.navigation import nav_connect

        nav_connect()

        from casework.case_types_known import case_types_source_register
        from casework.cases import visibility  # noqa: F401 - registers its navigation reads
        from casework.cases.types import CASE_TYPES

        # What a team may own and a webhook endpoint subscribe to: the layers below ask at use.
        case_types_source_register(lambda: {key: t.label for key, t in CASE_TYPES.items()})
