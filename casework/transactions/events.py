"""The transaction investigation's action event: a person accepted the agents' recommendation
to block the card, and core banking is asked to do it (casework/outbox/actions.py). Registered
in the outgoing webhooks' catalogue from TransactionsConfig.ready; its `data` schema is below."""

from __future__ import annotations

from casework.outbox.catalogue import EventType, action_data

CARD_BLOCK_REQUESTED = EventType(
    "transaction.card_block_requested", 1,
    "An investigator accepted the recommendation to block the card and reissue it: block it, "
    "then confirm (or report a failure) at `data.action.confirm_url`.",
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
        recommendation={"type": "object", "required": ["action", "title", "reason", "note", "accepted_by"],
                        "properties": {
                            "action": {"type": "string", "enum": ["block_card"]}, "title": {"type": "string"},
                            "reason": {"type": "string"}, "note": {"type": "string"},
                            "accepted_by": {"type": "string"}}},
        severity={"type": "string", "enum": ["CRITICAL", "HIGH", "MEDIUM", "LOW"]},
    ),
    action="Card block",
)

# The recommendations whose acceptance asks another system to act, and the event each sends.
ACTIONS = {"block_card": CARD_BLOCK_REQUESTED.name}


def card_block_request(*, actor, recommendation, now=None):
    """In the acceptance's transaction: ask core banking to block the card."""
    from casework.outbox.actions import action_request

    investigation = recommendation.investigation
    txn = investigation.transaction
    account = txn.account
    return action_request(actor=actor, type=CARD_BLOCK_REQUESTED.name, case=investigation.case, now=now, data={
        "card": {"account_id": account.account_id, "holder_name": account.holder_name, "last4": txn.card_last4},
        "transaction": {"transaction_id": txn.transaction_id, "amount": str(txn.amount), "currency": txn.currency,
                        "merchant": txn.merchant, "country": txn.country,
                        "occurred_at": txn.occurred_at.isoformat()},
        "recommendation": {"action": recommendation.action, "title": recommendation.title,
                           "reason": recommendation.reason, "note": recommendation.note,
                           "accepted_by": actor.get_username()},
        "severity": investigation.severity,
    })
