from __future__ import annotations

from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from casework.cases.types import CASE_TYPES, Tab, case_type_register_tab

        # Every case type's page gets the agent runs tab (live status, trace, re-run).
        for key in CASE_TYPES:
            case_type_register_tab(key, Tab("agents", "Agent runs", "agents/_run_tab.html"))

        # Pipelines register themselves and connect their signal receivers on import.
        from agents.pipelines import load_all

        load_all()
