"""The transaction investigation's action event: a person accepted the agents' recommendation
to block the card, and core banking is asked to do it (casework/cases/actions/services.py). Registered
in the outgoing webhooks' catalogue from TransactionsConfig.ready; its `data` schema is below."""

from __future__ import annotations

from casework.outbox.catalogue import EventType, action_data

CARD_BLOCK_REQUESTED = EventType(
    "transaction.card_block_requested", 1,
    "An investigator accepted the recommendation to block the card and reissue it, or a live detection "
    "rule with the block action matched one of its transactions (`data.rule`; `data.recommendation` is then "
    "null): block it, then confirm (or report a failure) at `data.action.confirm_url`.",
    action_data(
        card={"type": "object", "required": ["account_id", "holder_name", "last4"], "properties": {
            "account_id": {"type": "string"}, "holder_name": {"type": "string"},
            "last4": {"type": "string", "description": "The card's last four digits."}}},
        transaction={"type": "object",
                     "required": ["transaction_id", "amount", "currency", "merchant", "country", "occurred_at"],
                     "properties": {
                         "transaction_id": {"type": "string"},
                         "amount": {"type": "string", "description": "Decimal, as text: 1234.50."},
                         "currency": {"type": "string"}, "merchant": {"type": "string"},
                         "country": {"type": "string"},
                         "occurred_at": {"type": "string", "format": "date-time"}}},
        recommendation={"type": "object", "nullable": True,
                        "required": ["action", "title", "reason", "note", "accepted_by"],
                        "properties": {
                            "action": {"type": "string", "enum": ["block_card"]}, "title": {"type": "string"},
                            "reason": {"type": "string"}, "note": {"type": "string"},
                            "accepted_by": {"type": "string"}}},
        rule={"type": "object", "nullable": True, "required": ["name", "version", "conditions"],
              "description": "The live detection rule whose block action asked for it, or null.",
              "properties": {"name": {"type": "string"}, "version": {"type": "integer"},
                             "conditions": {"type": "array", "items": {"type": "object"}}}},
        severity={"type": "string", "enum": ["CRITICAL", "HIGH", "MEDIUM", "LOW"]},
    ),
    action="Card block",
)

# The recommendations whose acceptance asks another system to act, and the event each sends.
ACTIONS = {"block_card": CARD_BLOCK_REQUESTED.name}


def card_block_request(*, actor, recommendation, now=None):
    """In the acceptance's transaction: ask core banking to block the card."""
    investigation = recommendation.investigation
    return _card_block(actor=actor, case=investigation.case, txn=investigation.transaction,
                       severity=investigation.severity, now=now, rule=None, recommendation={
                           "action": recommendation.action, "title": recommendation.title,
                           "reason": recommendation.reason, "note": recommendation.note,
                           "accepted_by": actor.get_username()})


def card_block_by_rule(*, case, txn, version, now=None):
    """In the rule evaluation's transaction: a live block rule matched this card's transaction.
    Once per case: a card whose block is already requested in the case is not asked again."""
    from casework.outbox.models import Action

    if Action.objects.filter(case=case, type=CARD_BLOCK_REQUESTED.name).exists():
        return None
    return _card_block(actor="system", case=case, txn=txn, severity="HIGH", now=now, recommendation=None,
                       rule={"name": version.rule.name, "version": version.number, "conditions": version.conditions})


def _card_block(*, actor, case, txn, severity, now, rule, recommendation):
    from casework.cases.actions.services import action_request

    account = txn.account
    return action_request(actor=actor, type=CARD_BLOCK_REQUESTED.name, case=case, now=now, data={
        "card": {"account_id": account.account_id, "holder_name": account.holder_name, "last4": txn.card_last4},
        "transaction": {"transaction_id": txn.transaction_id, "amount": str(txn.amount), "currency": txn.currency,
                        "merchant": txn.merchant, "country": txn.country,
                        "occurred_at": txn.occurred_at.isoformat()},
        "recommendation": recommendation,
        "rule": rule,
        "severity": severity,
    })
