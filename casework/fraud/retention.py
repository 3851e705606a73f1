"""A fraud alert's personal data, for retention (casework.privacy), after the AML period: the
case's shared parts (description, attachments, entity mentions, agent prompts and answers,
comments) and the alert's prose about the customer. The scores, the decision and the learned
patterns (no personal data) stay; the account row is left to erasure of the subject."""

from __future__ import annotations

from casework.cases.types import Retention
from casework.fraud.models import Alert


def alert_purge(case) -> dict[str, int]:
    return {"alert explanations": Alert.objects.filter(case=case).update(one_line_explanation="", risk_factors=[])}


def alert_held(case) -> dict:
    return {"alert": Alert.objects.filter(case=case).values(
        "account__account_id", "risk_level", "fraud_probability", "one_line_explanation", "risk_factors",
        "created_at").first() or {}}

RETENTION = Retention(
    legal_duty="AML record keeping: 5 years after the case closed (EU AMLD Art. 40)",
    purge=alert_purge, held=alert_held, shared=("description", "attachments", "mentions", "agent_calls", "comments", "outbox"),
    describe="Alert explanation and risk factors, attachments, entity mentions, agent prompts and answers, "
             "comments; scores, decision and counts stay.")
