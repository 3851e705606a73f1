from __future__ import annotations

from django.apps import AppConfig

# The case page's evidence tabs, in the seed's order; each shows its agent's findings.
EVIDENCE_TABS = (
    ("fraud-transactions", "Transactions", "fraud/evidence/transaction.html"),
    ("fraud-geo", "Access & Geo", "fraud/evidence/geo.html"),
    ("fraud-identity", "Identity", "fraud/evidence/identity.html"),
    ("fraud-network", "Network", "fraud/evidence/network.html"),
    ("fraud-similar", "Similar Cases", "fraud/evidence/similar.html"),
)


class FraudConfig(AppConfig):
    name = "casework.fraud"
    label = "fraud"
    verbose_name = "Fraud alerts"

    def ready(self) -> None:
        # The type itself, before anything is registered on it (casework.cases.types): its key,
        # label, references' prefix, the outcomes a decision may take, its pipeline.
        from casework.cases.types import CaseType, case_type_register
        from casework.fraud.states import OUTCOMES

        case_type_register(CaseType("fraud_alert", "Fraud alert", "FRA", OUTCOMES, pipeline="fraud"))

        # What the alert adds to the shared chat and evaluation (casework.cases.types).
        from casework.cases.types import Chat, case_type_register_chat, case_type_register_evaluation
        from casework.fraud.chat_offline import fraud_chat_offline
        from casework.fraud.chat_tools import fraud_chat_context, fraud_chat_tools
        from casework.fraud.evals import EVALUATION

        case_type_register_chat("fraud_alert", Chat(tools=fraud_chat_tools, context=fraud_chat_context,
                                                  offline=fraud_chat_offline,
                                                  offline_help="the alert's facts, the account's history and similar cases"))
        case_type_register_evaluation("fraud_alert", EVALUATION)
        # Each final decision's look-alike row, written in the decision's transaction.
        from casework.cases.demo import demo_register
        from casework.cases.types import CASE_TYPES, Tab, case_type_register_tab
        from casework.fraud import signals  # noqa: F401
        from casework.fraud.demo import demo_load_fraud

        fraud = CASE_TYPES["fraud_alert"]
        fraud.record_attr = "fraud_alert"
        # The overview leads with the risk block, the copilot summary and the predictive
        # line; the decision box becomes the three fraud outcomes sharing one reason.
        fraud.overview_template = "fraud/_overview.html"
        fraud.decision_template = "fraud/_decision.html"
        for tab_id, label, template in EVIDENCE_TABS:
            case_type_register_tab("fraud_alert", Tab(tab_id, label, template))
        demo_register("fraud_alert", demo_load_fraud)
        # Once every type's demo cases exist: a call note on the oldest open alert (Evidence tab).
        from casework.cases.demo import demo_register_after
        from casework.fraud.demo_attachments import demo_load_attachments

        demo_register_after(demo_load_attachments)
        # The dashboard's agreement between agents and people (casework/cases/dashboard).
        from casework.cases.types import case_type_register_recommendation
        from casework.fraud.recommendation import RECOMMENDATION

        case_type_register_recommendation("fraud_alert", RECOMMENDATION)
        # The alert's declared lifecycle (casework/fraud/states.py), drawn on /lifecycles/.
        from casework.cases.types import case_type_register_lifecycle
        from casework.fraud.states import FRAUD_LIFECYCLE

        case_type_register_lifecycle("fraud_alert", FRAUD_LIFECYCLE)
        # A confirmed fraud asks for the account's freeze (casework/fraud/events.py).
        from casework.cases.types import case_type_register_decision_effect
        from casework.fraud.events import ACCOUNT_FREEZE_REQUESTED, account_freeze_on_decision
        from casework.outbox.catalogue import event_type_register

        event_type_register(ACCOUNT_FREEZE_REQUESTED)
        case_type_register_decision_effect("fraud_alert", account_freeze_on_decision)

        # What its records name, seen across cases (casework.entities).
        from casework.cases.types import case_type_register_entities
        from casework.fraud.entities import ENTITIES as FRAUD_ENTITIES

        case_type_register_entities("fraud_alert", FRAUD_ENTITIES)

        # Its stylesheet, linked on every page, and its links in the navigation bar.
        from casework.cases.shell import NavLink, nav_link_register, stylesheet_register
        from casework.people.roles import is_investigator

        stylesheet_register("fraud/fraud.css")
        nav_link_register(NavLink("Fraud", "fraud:patterns", is_investigator, current_app="fraud", order=10))

        # The Tasks tab's checklist for its cases (casework/fraud/checklist.py).
        from casework.cases.tasks.checklists import checklist_register
        from casework.fraud.checklist import CHECKLIST

        checklist_register("fraud_alert", CHECKLIST)

        # Its agents (casework/fraud/agents/): the pipeline registers itself with the runtime.
        from agents.runtime.pipeline import pipeline_module_load

        pipeline_module_load("casework.fraud.agents.pipeline")
