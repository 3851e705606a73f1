from __future__ import annotations

from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "casework.access"
    label = "access"
    verbose_name = "Access changes"

    def ready(self) -> None:
        from casework.cases.visibility import addressed_register

        # The manager a validation request is addressed to reads its case's reference in their
        # inbox (not the case: managers work no cases).
        addressed_register(_cases_addressed_to)

        # The type itself, before anything is registered on it (casework.cases.types): its key,
        # label, references' prefix, the outcomes a decision may take, its pipeline.
        from casework.cases.types import CaseType, case_type_register

        case_type_register(CaseType(
            "access_change", "Access change", "ACC",
            (("accepted", "Change accepted"), ("rejected", "Change rejected"),
             ("manual", "Handled manually")),
            pipeline="access",
        ))

        # What the change adds to the shared bulk close, chat, evaluation and a manager's
        # dashboard (casework.cases.types).
        from casework.access.chat_offline import access_chat_offline
        from casework.access.chat_tools import access_chat_context, access_chat_tools
        from casework.access.dashboard import PANEL
        from casework.access.decide import access_decide
        from casework.access.evals import EVALUATION
        from casework.cases.types import (
            Chat,
            case_type_register_chat,
            case_type_register_decide,
            case_type_register_evaluation,
            case_type_register_panel,
        )

        case_type_register_decide("access_change", access_decide)
        case_type_register_chat("access_change", Chat(tools=access_chat_tools, context=access_chat_context,
                                                    offline=access_chat_offline,
                                                    offline_help="the rights check and the absences"))
        case_type_register_evaluation("access_change", EVALUATION)
        case_type_register_panel("access_change", PANEL)

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
        # A rejected change asks its system to revert it (casework/access/events.py).
        from casework.access.events import REVERT_REQUESTED, revert_on_decision
        from casework.cases.types import case_type_register_decision_effect
        from casework.outbox.catalogue import event_type_register

        event_type_register(REVERT_REQUESTED)
        case_type_register_decision_effect("access_change", revert_on_decision)

        # What its records name, seen across cases (casework.entities).
        from casework.access.entities import ENTITIES as ACCESS_ENTITIES
        from casework.cases.types import case_type_register_entities

        case_type_register_entities("access_change", ACCESS_ENTITIES)

        # Its stylesheet, linked on every page, and its links in the navigation bar.
        from casework.access.selectors import open_inbox_count
        from casework.cases.shell import NavLink, nav_link_register, stylesheet_register
        from casework.people.roles import is_investigator, is_manager

        stylesheet_register("access/access.css")
        nav_link_register(NavLink("Report access change", "access:mutation_new", is_investigator, order=30))
        # A manager's inbox of validation requests, with how many wait for them.
        nav_link_register(NavLink("Inbox", "access:inbox", is_manager, current_url_name="inbox",
                                  count=open_inbox_count, count_label="requests waiting for you", order=60))

        # The Tasks tab's checklist for its cases (casework/access/checklist.py).
        from casework.access.checklist import CHECKLIST
        from casework.cases.tasks.checklists import checklist_register

        checklist_register("access_change", CHECKLIST)

        # Its agents (casework/access/agents/): the pipeline registers itself with the runtime.
        from agents.runtime.pipeline import pipeline_module_load

        pipeline_module_load("casework.access.agents.pipeline")

        # What its personal data is, for retention and subject access (casework.privacy).
        from casework.access.retention import RETENTION as ACCESS_RETENTION
        from casework.cases.types import case_type_register_retention

        case_type_register_retention("access_change", ACCESS_RETENTION)


def _cases_addressed_to(user):
    from casework.access.models import InfoRequest

    return InfoRequest.objects.filter(kind=InfoRequest.Kind.MANAGER, recipient__user=user).values("mutation__case_id")
