from __future__ import annotations

from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "casework.access"
    label = "access"
    verbose_name = "Access changes"

    def ready(self) -> None:
        from casework.access import signals  # noqa: F401 - connects the case_closed receiver
        from casework.access.demo import demo_load_access
        from casework.cases.demo import demo_register
        from casework.cases.types import CASE_TYPES, Tab, case_type_register_tab

        access = CASE_TYPES["access_change"]
        access.record_attr = "access_change"
        # One decision form per case: the report tab's, beside the recommendation; the
        # sidebar points there, and the overview shows the recommendation.
        access.overview_template = "access/_overview.html"
        access.decision_template = "access/_decision.html"
        for tab in (
            Tab("access-change", "Change & evidence", "access/tabs/change.html"),
            Tab("access-messages", "Agent messages", "access/tabs/messages.html"),
            Tab("access-answers", "Answers", "access/tabs/answers.html"),
            Tab("access-report", "Advisory report & decision", "access/tabs/report.html"),
        ):
            case_type_register_tab("access_change", tab)
        demo_register("access_change", demo_load_access)
        # The dashboard's agreement between agents and people (casework/cases/dashboard).
        from casework.access.recommendation import RECOMMENDATION
        from casework.cases.types import case_type_register_recommendation

        case_type_register_recommendation("access_change", RECOMMENDATION)
        from casework.access.states import ACCESS_LIFECYCLE
        from casework.cases.types import case_type_register_lifecycle

        case_type_register_lifecycle("access_change", ACCESS_LIFECYCLE)
