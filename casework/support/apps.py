from __future__ import annotations

from django.apps import AppConfig


class SupportConfig(AppConfig):
    name = "casework.support"
    label = "support"
    verbose_name = "Support tickets"

    def ready(self) -> None:
        # The type itself, before anything is registered on it (casework.cases.types): its key,
        # label, references' prefix, the outcomes a decision may take, its pipeline.
        from casework.cases.types import CaseType, case_type_register

        case_type_register(CaseType(
            "support_ticket", "Support ticket", "SUP",
            (("replied", "Replied"), ("escalated", "Escalated"), ("no_action", "No action needed")),
            pipeline="support",
        ))

        # What the ticket adds to the shared bulk close, chat and evaluation (casework.cases.types).
        from casework.cases.types import (
            Chat,
            case_type_register_chat,
            case_type_register_decide,
            case_type_register_evaluation,
        )
        from casework.support.chat_tools import support_chat_tools
        from casework.support.decide import ticket_decide
        from casework.support.evals import EVALUATION

        case_type_register_decide("support_ticket", ticket_decide)
        case_type_register_chat("support_ticket", Chat(tools=support_chat_tools))
        case_type_register_evaluation("support_ticket", EVALUATION)

        from casework.cases.demo import demo_register
        from casework.cases.types import CASE_TYPES
        from casework.support import signals  # noqa: F401 - connects the case_closing/case_closed receivers
        from casework.support.demo import demo_load_support

        support = CASE_TYPES["support_ticket"]
        support.record_attr = "support_ticket"
        support.overview_template = "support/_overview.html"
        support.decision_template = "support/_decision.html"
        demo_register("support_ticket", demo_load_support)
        # The dashboard's agreement between agents and people (casework/cases/dashboard).
        from casework.cases.types import case_type_register_recommendation
        from casework.support.recommendation import RECOMMENDATION

        case_type_register_recommendation("support_ticket", RECOMMENDATION)
        # The ticket's declared states (casework.support.states), drawn on /lifecycles/.
        from casework.cases.types import case_type_register_lifecycle
        from casework.support.states import SUPPORT_LIFECYCLE

        case_type_register_lifecycle("support_ticket", SUPPORT_LIFECYCLE)
        # The auto-answer resolution rate on the team's dashboard (casework.support.dashboard).
        from casework.cases.types import case_type_register_panel
        from casework.support.dashboard import PANEL

        case_type_register_panel("support_ticket", PANEL)
        # The reply's email and its action event (casework.outbox).
        from casework.support.events import support_events_register

        support_events_register()
        # The inbound email endpoints' receiver (anymail's inbound signal), and what the
        # ticket's records name, seen across cases (casework.entities).
        from casework.cases.types import case_type_register_entities
        from casework.support import inbound_views  # noqa: F401
        from casework.support.entities import ENTITIES as SUPPORT_ENTITIES

        case_type_register_entities("support_ticket", SUPPORT_ENTITIES)

        # Its stylesheet, linked on every page, and its links in the navigation bar.
        from casework.cases.shell import NavLink, nav_link_register, stylesheet_register
        from casework.people.roles import is_investigator

        stylesheet_register("support/support.css")
        nav_link_register(NavLink("Support", "support:queue", is_investigator, current_app="support", order=20))

        # The Tasks tab's checklist for its cases (casework/support/checklist.py).
        from casework.cases.tasks.checklists import checklist_register
        from casework.support.checklist import CHECKLIST

        checklist_register("support_ticket", CHECKLIST)

        # Its agents (casework/support/agents/): the pipeline registers itself with the runtime.
        from agents.runtime.pipeline import pipeline_module_load

        pipeline_module_load("casework.support.agents.pipeline")

        # What its personal data is, for retention and subject access (casework.privacy).
        from casework.cases.types import case_type_register_retention
        from casework.support.retention import RETENTION as SUPPORT_RETENTION

        case_type_register_retention("support_ticket", SUPPORT_RETENTION)
