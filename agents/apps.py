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

        # Each case type loads its own pipeline from its AppConfig.ready
        # (agents.runtime.pipeline.pipeline_module_load); the agents app names none of them.
        # The case domain offers a case type only while its pipeline is registered.
        from agents.runtime.pipeline import PIPELINES
        from casework.cases.types import case_types_set_pipeline_source

        case_types_set_pipeline_source(lambda: PIPELINES.keys())

        from agents import signals  # noqa: F401 - closing a case ends its waiting runs

        # A run's statuses, drawn on /lifecycles/ beside the case types' (waiting for approval included).
        from agents.run_lifecycle import RUN_LIFECYCLE
        from casework.cases.lifecycle import lifecycle_register

        lifecycle_register(RUN_LIFECYCLE)

        # A database restart interrupts a run (retried from its last saved step), never fails it.
        from agents.runtime.transient import transient_check_register
        from casework.db_transient import is_transient_db_error

        transient_check_register(is_transient_db_error)
