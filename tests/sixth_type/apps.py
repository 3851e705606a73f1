"""The warranty claim registers everything it adds from ready(), as the five real types do
(casework/releases/apps.py): the type itself, its lifecycle, its record's tab, its chat, its
evaluation, its entity kind and entities, its outgoing event, its checklist and its pipeline."""

from __future__ import annotations

from django.apps import AppConfig

KEY = "warranty_claim"


class WarrantyConfig(AppConfig):
    name = "tests.sixth_type"
    label = "warranty"
    verbose_name = "Warranty claims (test-only case type)"

    def ready(self) -> None:
        # The type itself: its key, label, references' prefix, outcomes and pipeline.
        from casework.cases.types import CaseType, Tab, case_type_register, case_type_register_tab

        case_type_register(CaseType(
            KEY, "Warranty claim", "WAR",
            (("repair", "Repair under warranty"), ("refuse", "Refuse the claim")),
            pipeline="warranty", record_attr="warranty_claim",
        ))
        case_type_register_tab(KEY, Tab("warranty-claim", "Claim", "warranty/tabs/claim.html"))

        # Its declared lifecycle (states.py), drawn on /lifecycles/.
        from casework.cases.types import case_type_register_lifecycle
        from tests.sixth_type.states import WARRANTY_LIFECYCLE

        case_type_register_lifecycle(KEY, WARRANTY_LIFECYCLE)

        # "Ask the agent": its read-only tool, the claim in the context, its offline answers.
        from casework.cases.types import case_type_register_chat
        from tests.sixth_type.chat_tools import CHAT

        case_type_register_chat(KEY, CHAT)

        # The evaluation harness: how a scenario becomes a claim; its scenarios are in scenarios/.
        from casework.cases.types import case_type_register_evaluation
        from tests.sixth_type.evals import EVALUATION

        case_type_register_evaluation(KEY, EVALUATION)

        # What its records name across cases: a kind of its own (the product's serial number).
        from casework.cases.types import case_type_register_entities
        from casework.entities.kinds import kind_register
        from tests.sixth_type.entities import ENTITIES

        kind_register("serial_number", "Serial number")
        case_type_register_entities(KEY, ENTITIES)

        # A person's decision tells the repair shop (events.py), in the decision's transaction.
        from casework.cases.types import case_type_register_decision_effect
        from casework.outbox.catalogue import event_type_register
        from tests.sixth_type.events import WARRANTY_DECIDED, warranty_decided_on_decision

        event_type_register(WARRANTY_DECIDED)
        case_type_register_decision_effect(KEY, warranty_decided_on_decision)

        # The Tasks tab's checklist.
        from casework.cases.tasks.checklists import checklist_register

        checklist_register(KEY, [("check_receipt", "Check the receipt's date"),
                                 ("book_repair", "Book the repair")])

        # Its agents (agents/): the pipeline registers itself with the runtime.
        from agents.runtime.pipeline import pipeline_module_load

        pipeline_module_load("tests.sixth_type.agents.pipeline")
