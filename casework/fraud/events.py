"""The fraud alert's action event: a person confirmed fraud, and the bank's account system is
asked to freeze the account (casework/cases/actions/services.py). Registered in the outgoing webhooks'
catalogue from FraudConfig.ready, and sent by the decision effect below, in the decision's
transaction, whichever way the case was closed (its page, the API, a bulk close)."""

from __future__ import annotations

from casework.outbox.catalogue import DECISION, EventType, action_data

ACCOUNT_FREEZE_REQUESTED = EventType(
    "fraud.account_freeze_requested", 1,
    "An investigator confirmed fraud on an alert: freeze the account, then confirm (or report a "
    "failure) at `data.action.confirm_url`.",
    action_data(
        account={"type": "object", "required": ["account_id"], "properties": {"account_id": {"type": "string"}}},
        alert={"type": "object", "required": ["risk_level", "fraud_probability", "anomaly_score", "explanation"],
               "properties": {
                   "risk_level": {"type": "string", "enum": ["low", "medium", "high", "critical"]},
                   "fraud_probability": {"type": "number", "minimum": 0, "maximum": 1},
                   "anomaly_score": {"type": "number", "minimum": 0, "maximum": 1},
                   "explanation": {"type": "string"}}},
        decision=DECISION,
    ),
    action="Account freeze",
)

# The outcome that asks for the freeze.
FREEZE_OUTCOMES = ("confirmed_fraud",)


def account_freeze_on_decision(*, actor, case, decision) -> None:
    """Decision effect (casework.cases.types.case_type_register_decision_effect): a confirmed
    fraud asks for the alert's account to be frozen. A case with no alert has no account to name."""
    from casework.cases.actions.services import action_request
    from casework.fraud.models import Alert
    from casework.outbox.services import decision_data

    if decision.outcome not in FREEZE_OUTCOMES:
        return
    alert = Alert.objects.select_related("account").filter(case=case).first()
    if alert is None:
        return
    action_request(actor=actor, type=ACCOUNT_FREEZE_REQUESTED.name, case=case, data={
        "account": {"account_id": alert.account.account_id},
        "alert": {"risk_level": alert.risk_level, "fraud_probability": alert.fraud_probability,
                  "anomaly_score": alert.anomaly_score, "explanation": alert.one_line_explanation},
        "decision": decision_data(decision),
    })
