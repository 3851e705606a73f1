from __future__ import annotations

from django.apps import AppConfig


def _admin_case_ids(user):
    """The rule for the Django admin (audit.admin_scope): the ids of the cases this person may
    see (casework.cases.visibility), None for every case (admins)."""
    from casework.cases.visibility import cases_visible_to, sees_every_case

    if getattr(user, "is_authenticated", False) and user.is_active and sees_every_case(user):
        return None
    return cases_visible_to(user).values("pk")


class CasesConfig(AppConfig):
    name = "casework.cases"
    label = "cases"
    verbose_name = "Cases"

    def ready(self) -> None:
        from django.core import checks

        from casework.cases.checks import case_sla_check, lifecycle_claims_check

        checks.register(case_sla_check)
        checks.register(lifecycle_claims_check)

        from casework.cases.lifecycle import lifecycle_register
        from casework.cases.lifecycle.case import CASE_LIFECYCLE

        lifecycle_register(CASE_LIFECYCLE)

        from casework.cases import receivers  # noqa: F401 - a deactivated person's cases go back to the queue
        from casework.cases.navigation import nav_connect

        nav_connect()

        # The admins of every layer (audit, outbox, the types) show only the cases of this rule.
        from audit.admin_scope import case_scope_register
        from casework.cases import visibility  # noqa: F401 - registers its navigation reads

        case_scope_register(_admin_case_ids)

        from casework.cases.shell import NavLink, nav_link_register
        from casework.cases.visibility import sees_every_case

        # Admins: every team, its case types and people; what any person can see, and why.
        nav_link_register(NavLink("Teams", "teams:list", sees_every_case, current_app="teams", order=90))

        from casework.case_type_source import case_types_source_register
        from casework.cases.types import CASE_TYPES

        # What a team may own and a webhook endpoint subscribe to: the layers below ask at use.
        case_types_source_register(lambda: {key: t.label for key, t in CASE_TYPES.items()})
