from __future__ import annotations

from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "agents.chat"
    label = "chat"
    verbose_name = "Conversations with a case's agent"

    def ready(self) -> None:
        from casework.cases.types import CASE_TYPES, Tab, case_type_register_tab

        # Every case type's page gets "Ask the agent" (the tab loads its panel with htmx).
        for key in CASE_TYPES:
            case_type_register_tab(key, Tab("ask", "Ask the agent", "chat/_tab.html"))
        from agents.chat import offline  # noqa: F401 - registers the offline case assistant
