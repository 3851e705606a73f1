from __future__ import annotations

from django.apps import AppConfig


class TransactionsConfig(AppConfig):
    name = "casework.transactions"
    label = "transactions"
    verbose_name = "Transaction investigations"

    def ready(self) -> None:
        # The type itself, before anything is registered on it (casework.cases.types): its key,
        # label, references' prefix, the outcomes a decision may take, its pipeline.
        from casework.cases.types import CaseType, case_type_register

        case_type_register(CaseType(
            "transaction_investigation", "Transaction investigation", "TXN",
            (("fraud", "Fraud"), ("not_fraud", "Not fraud"), ("inconclusive", "Inconclusive")),
            pipeline="transactions",
        ))

        # What the investigation adds to the shared chat and evaluation (casework.cases.types).
        from casework.cases.types import Chat, case_type_register_chat, case_type_register_evaluation
        from casework.transactions.chat_offline import transaction_chat_offline
        from casework.transactions.chat_tools import transaction_chat_context, transaction_chat_tools
        from casework.transactions.evals import EVALUATION

        case_type_register_chat("transaction_investigation",
                                Chat(tools=transaction_chat_tools, context=transaction_chat_context,
                                     offline=transaction_chat_offline,
                                     offline_help="the card's transactions and the investigation's record"))
        case_type_register_evaluation("transaction_investigation", EVALUATION)

        from casework.cases.demo import demo_register
        from casework.cases.types import CASE_TYPES, Tab, case_type_register_tab
        from casework.transactions import signals  # noqa: F401 - connects the case_closed receiver
        from casework.transactions.demo import demo_load_transactions

        txn = CASE_TYPES["transaction_investigation"]
        txn.record_attr = "txn_investigation"
        txn.overview_template = "transactions/_overview.html"
        for tab in (
            Tab("txn-history", "Transaction & history", "transactions/tabs/history.html"),
            Tab("txn-timelines", "Planner & tools", "transactions/tabs/timelines.html"),
            Tab("txn-rule", "Rule draft", "transactions/tabs/rule.html"),
        ):
            case_type_register_tab("transaction_investigation", tab)
        demo_register("transaction_investigation", demo_load_transactions)
        # The dashboard's agreement between agents and people (casework/cases/dashboard).
        from casework.cases.types import case_type_register_recommendation
        from casework.transactions.recommendation import RECOMMENDATION

        case_type_register_recommendation("transaction_investigation", RECOMMENDATION)
        # Investigation.status: its states and moves (casework/transactions/states.py).
        from casework.cases.types import case_type_register_lifecycle
        from casework.transactions.states import TXN_LIFECYCLE

        case_type_register_lifecycle("transaction_investigation", TXN_LIFECYCLE)
        # Its action event in the outgoing webhooks' catalogue (casework/transactions/events.py).
        from casework.outbox.catalogue import event_type_register
        from casework.transactions.events import CARD_BLOCK_REQUESTED

        event_type_register(CARD_BLOCK_REQUESTED)

        # What its records name, seen across cases (casework.entities).
        from casework.cases.types import case_type_register_entities
        from casework.transactions.entities import ENTITIES as TRANSACTIONS_ENTITIES

        case_type_register_entities("transaction_investigation", TRANSACTIONS_ENTITIES)

        # Its stylesheet, linked on every page, and its links in the navigation bar.
        from casework.cases.shell import NavLink, nav_link_register, stylesheet_register
        from casework.people.roles import is_investigator

        stylesheet_register("transactions/transactions.css")
        nav_link_register(NavLink("Transactions", "transactions:index", is_investigator, current_app="transactions",
                                  order=40))

        # The Tasks tab's checklist for its cases (casework/transactions/checklist.py).
        from casework.cases.tasks.checklists import checklist_register
        from casework.transactions.checklist import CHECKLIST

        checklist_register("transaction_investigation", CHECKLIST)

        # Its agents (casework/transactions/agents/): the pipeline registers itself with the runtime.
        from agents.runtime.pipeline import pipeline_module_load

        pipeline_module_load("casework.transactions.agents.pipeline")

        # What its personal data is, for retention and subject access (casework.privacy).
        from casework.cases.types import case_type_register_retention
        from casework.transactions.retention import RETENTION as TRANSACTIONS_RETENTION

        case_type_register_retention("transaction_investigation", TRANSACTIONS_RETENTION)
