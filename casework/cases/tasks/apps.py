from __future__ import annotations

from django.apps import AppConfig


class CaseTasksConfig(AppConfig):
    name = "casework.cases.tasks"
    label = "case_tasks"
    verbose_name = "Case tasks"

    def ready(self) -> None:
        # One tab on every case type's page, the three being built included: registered here,
        # after the case-type apps (INSTALLED_APPS order), so it comes after their own tabs.
        from casework.cases.demo import demo_register_after
        from casework.cases.tasks.demo import demo_load_tasks
        from casework.cases.types import CASE_TYPES, Tab, case_type_register_tab

        for key in CASE_TYPES:
            case_type_register_tab(key, Tab("tasks", "Tasks", "case_tasks/_tab.html"))
        demo_register_after(demo_load_tasks)
