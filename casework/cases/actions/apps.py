from __future__ import annotations

from django.apps import AppConfig


class CaseActionsConfig(AppConfig):
    """Actions: what a case's decision asked another system to do, and how far it got. The
    Action rows stay in the outbox's tables (outbox.Action: no data moved); what reads and
    moves them lives here, beside the case, since an action is a state of the case."""

    name = "casework.cases.actions"
    label = "case_actions"
    verbose_name = "Actions"

    def ready(self) -> None:
        from casework.cases.actions import receivers  # noqa: F401 - the outbox's word on each delivery
        from casework.cases.actions.metrics import action_metric_families
        from casework.cases.actions.states import ACTION_LIFECYCLE
        from casework.cases.lifecycle import lifecycle_register
        from casework.cases.types import CASE_TYPES, Tab, case_type_register_tab
        from casework.ops.metrics import metric_families_register

        # Action.state: requested, delivered, confirmed or failed (casework/cases/actions/states.py).
        lifecycle_register(ACTION_LIFECYCLE)
        metric_families_register(action_metric_families)

        # Every case page lists what went out about the case, and how far each delivery got: the
        # outbox's own tab, registered here because the outbox sits below the case core and names
        # none of it. After the case-type apps (INSTALLED_APPS order), as the outbox's ready was.
        for key in CASE_TYPES:
            case_type_register_tab(key, Tab("outbox", "Outgoing events", "outbox/_case_events.html"))
