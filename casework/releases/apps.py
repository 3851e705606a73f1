from __future__ import annotations

from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    name = "casework.releases"
    label = "releases"
    verbose_name = "Release risk"

    def ready(self) -> None:
        # The type itself, before anything is registered on it (casework.cases.types): its key,
        # label, references' prefix, the outcomes a decision may take, its pipeline.
        from casework.cases.types import CaseType, case_type_register

        case_type_register(CaseType(
            "release_risk", "Release risk", "REL",
            (("go", "Release approved"), ("no_go", "Release blocked"), ("deferred", "Deferred")),
            pipeline="releases", decider_role="release_manager",
        ))

        # What the release adds to the shared bulk close, chat and evaluation (casework.cases.types).
        from casework.cases.types import (
            Chat,
            case_type_register_chat,
            case_type_register_decide,
            case_type_register_evaluation,
        )
        from casework.releases.chat_offline import release_chat_offline
        from casework.releases.chat_tools import release_chat_context, release_chat_tools
        from casework.releases.decide import release_decide_case
        from casework.releases.evals import EVALUATION

        case_type_register_decide("release_risk", release_decide_case)
        case_type_register_chat("release_risk", Chat(tools=release_chat_tools, context=release_chat_context,
                                                     offline=release_chat_offline, offline_help="which tests failed"))
        case_type_register_evaluation("release_risk", EVALUATION)

        from casework.cases.demo import demo_register
        from casework.cases.types import CASE_TYPES, Tab, case_type_register_tab
        from casework.releases.demo import demo_load_releases

        releases = CASE_TYPES["release_risk"]
        releases.record_attr = "release"
        releases.overview_template = "releases/_overview.html"
        releases.decision_template = "releases/_decision.html"
        case_type_register_tab("release_risk", Tab("rel-tools", "Detective's tool calls", "releases/tabs/tools.html"))
        demo_register("release_risk", demo_load_releases)
        # The dashboard's agreement between agents and people (casework/cases/dashboard).
        from casework.cases.types import case_type_register_recommendation
        from casework.releases.recommendation import RECOMMENDATION

        case_type_register_recommendation("release_risk", RECOMMENDATION)
        # The assessment's declared lifecycle (casework/releases/states.py), drawn on /lifecycles/;
        # a close from anywhere makes the release decided.
        from casework.cases.types import case_type_register_lifecycle
        from casework.releases import receivers  # noqa: F401 - connects the case_closed receiver
        from casework.releases.states import RELEASE_LIFECYCLE

        case_type_register_lifecycle("release_risk", RELEASE_LIFECYCLE)
        # Every decision goes to CI as an action (casework/releases/events.py).
        from casework.cases.types import case_type_register_decision_effect
        from casework.outbox.catalogue import event_type_register
        from casework.releases.events import RELEASE_DECIDED, release_decided_on_decision

        event_type_register(RELEASE_DECIDED)
        case_type_register_decision_effect("release_risk", release_decided_on_decision)

        # What its records name, seen across cases (casework.entities).
        from casework.cases.types import case_type_register_entities
        from casework.entities.kinds import kind_register
        from casework.releases.entities import ENTITIES as RELEASES_ENTITIES

        kind_register("release_component", "Release component", caseless=True)

        case_type_register_entities("release_risk", RELEASES_ENTITIES)

        # Its stylesheet, linked on every page, and its links in the navigation bar.
        from casework.cases.shell import NavLink, nav_link_register, stylesheet_register
        from casework.people.roles import is_investigator

        stylesheet_register("releases/releases.css")
        nav_link_register(NavLink("Releases", "releases:index", is_investigator, current_app="releases", order=50))

        # The Tasks tab's checklist for its cases (casework/releases/checklist.py).
        from casework.cases.tasks.checklists import checklist_register
        from casework.releases.checklist import CHECKLIST

        checklist_register("release_risk", CHECKLIST)

        # Its agents (casework/releases/agents/): the pipeline registers itself with the runtime.
        from agents.runtime.pipeline import pipeline_module_load

        pipeline_module_load("casework.releases.agents.pipeline")

        # What its personal data is, for retention and subject access (casework.privacy).
        from casework.cases.types import case_type_register_retention
        from casework.releases.retention import RETENTION as RELEASES_RETENTION

        case_type_register_retention("release_risk", RELEASES_RETENTION)
