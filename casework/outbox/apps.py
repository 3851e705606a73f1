from __future__ import annotations

from django.apps import AppConfig


class OutboxConfig(AppConfig):
    name = "casework.outbox"
    label = "outbox"
    verbose_name = "Outgoing webhooks"

    def ready(self) -> None:
        from casework.cases.actions.states import ACTION_LIFECYCLE
        from casework.cases.lifecycle import lifecycle_register
        from casework.cases.types import CASE_TYPES, Tab, case_type_register_tab

        # Action.state: requested, delivered, confirmed or failed (casework/cases/actions/states.py).
        lifecycle_register(ACTION_LIFECYCLE)

        # Every case page lists what went out about the case, and how far each delivery got.
        for key in CASE_TYPES:
            case_type_register_tab(key, Tab("outbox", "Outgoing events", "outbox/_case_events.html"))
