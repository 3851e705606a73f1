"""A transaction investigation's personal data, for retention (casework.privacy), after the AML
period: the case's shared parts and the investigation's summary, state and tool inputs and
outputs. Severity, confidence, the decision and accepted rules stay; the transaction and card
rows are left to erasure of the subject."""

from __future__ import annotations

from casework.cases.types import Retention
from casework.transactions.models import CardAccount, Investigation, ToolExecution


def investigation_purge(case) -> dict[str, int]:
    investigations = Investigation.objects.filter(case=case)
    tools = ToolExecution.objects.filter(investigation__in=investigations).update(input_summary={}, output_summary={})
    return {"investigation summaries": investigations.update(summary="", state={}), "tool executions": tools}


def investigation_held(case) -> dict:
    return {"investigation": Investigation.objects.filter(case=case).values(
        "transaction__transaction_id", "status", "severity", "summary", "created_at").first() or {}}

def holder_identifiers(entity) -> list[str]:
    """The card holder's name, for an account entity (the card account's id is the entity's value)."""
    if entity.kind != "account":
        return []
    return [n for n in CardAccount.objects.filter(account_id=entity.value).values_list("holder_name", flat=True) if n]


RETENTION = Retention(
    legal_duty="AML record keeping: 5 years after the case closed (EU AMLD Art. 40)",
    identifiers=holder_identifiers,
    purge=investigation_purge, held=investigation_held, shared=("description", "attachments", "mentions", "agent_calls", "comments", "outbox"),
    describe="Investigation summary, state and tool inputs/outputs, attachments, entity mentions, agent prompts "
             "and answers, comments; severity, decision and rules stay.")
