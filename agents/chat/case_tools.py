"""Each case type's own read-only tools for "Ask the agent", and what its record adds to the
conversation's context (agents.chat.context registers both per case type).

- fraud_alert: get_alert_facts (the alert's 13 features and its scores), get_account_history
  (the account's other alerts and their decisions, its device / IP links, linked accounts
  whose fraud a person confirmed), find_similar_cases (the nearest past cases a person
  confirmed as fraud or cleared, by feature distance).
- access_change: check_authorization (the rights check as of a day) and lookup_data (the
  change, an employee, their authorisations, sick leave and vacation, the answers): the
  investigation's own two read tools; never send_notification or generate_report.
- transaction_investigation: get_card_transactions (the card's history, newest first) and
  get_investigation_record (the tool executions, planner decisions, insights and
  recommendations of the investigation).

Every handler reads only; each takes the case reference (or an id the context names), so a
question about another case of the same type works as the person's own access allows.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agents.runtime.tools import Tool

LIMIT = 50


class CaseArgs(BaseModel):
    reference: str = Field(min_length=1, max_length=20, description="The case reference, e.g. FRA-000012.")


class SimilarArgs(CaseArgs):
    limit: int = Field(default=5, ge=1, le=20, description="How many of each kind, nearest first.")


class CardArgs(CaseArgs):
    limit: int = Field(default=20, ge=1, le=LIMIT, description="How many transactions, newest first.")


def _alert(reference: str):
    from casework.fraud.models import Alert

    alert = Alert.objects.select_related("account", "case").filter(case__reference=reference.upper()).first()
    if alert is None:
        raise LookupError(f"No fraud alert on case {reference!r}.")
    return alert


def get_alert_facts(args: CaseArgs) -> dict:
    """The alert's 13 behavioural features and its scores (fraud probability, anomaly score, risk
    level, the one-line explanation and risk factors, and where the scores came from)."""
    alert = _alert(args.reference)
    return {"reference": alert.case.reference, "account_id": alert.account.account_id,
            "created_at": alert.created_at.isoformat(), "features": alert.features, "scores": alert.scores,
            "score_source": alert.score_source,
            "scorer_filled": alert.scorer_filled}


def get_account_history(args: CaseArgs) -> dict:
    """The account's other alerts (newest first, each with its case status and decision), its
    device and IP links, and the linked accounts whose fraud a person confirmed."""
    from casework.cases.models import Decision
    from casework.fraud.models import Alert
    from casework.fraud.similarity import known_fraud_links

    alert = _alert(args.reference)
    others = list(Alert.objects.filter(account=alert.account).exclude(pk=alert.pk).select_related("case")
                  .order_by("-created_at", "-id")[:20])
    decisions = {d.case_id: d for d in Decision.objects.filter(final=True, case_id__in=[a.case_id for a in others])}
    return {
        "account_id": alert.account.account_id,
        "other_alerts": [{"reference": a.case.reference, "created_at": a.created_at.isoformat(),
                          "risk_level": a.risk_level, "fraud_probability": a.fraud_probability,
                          "case_status": a.case.status,
                          "decision": decisions[a.case_id].outcome if a.case_id in decisions else None}
                         for a in others],
        "links": [{"kind": link.kind, "value": link.value} for link in alert.account.links.all()[:LIMIT]],
        "confirmed_fraud_links": known_fraud_links(alert.account),
    }


def find_similar_cases(args: SimilarArgs) -> dict:
    """Past alerts that look like this one (feature distance at most 3.0) whose cases a person
    decided: confirmed fraud (with the pattern captured) and cleared (legit / false positive)."""
    from casework.fraud.similarity import similar_decided

    alert = _alert(args.reference)
    found = similar_decided(alert, limit=args.limit)
    patterns = {p.case_id: p.one_sentence_description for p in found.patterns}
    return {
        "reference": alert.case.reference, "confirmed_count": found.confirmed_count,
        "confirmed": [{"reference": near.reference, "account_id": near.account_id,
                       "distance": near.distance, "pattern": patterns.get(near.case_id, "")}
                      for near in found.confirmed],
        "cleared_count": found.cleared_count, "cleared": found.cleared,
    }


def _investigation(reference: str):
    from casework.transactions.models import Investigation

    investigation = (Investigation.objects.select_related("case", "transaction__account")
                     .filter(case__reference=reference.upper()).first())
    if investigation is None:
        raise LookupError(f"No transaction investigation on case {reference!r}.")
    return investigation


def get_card_transactions(args: CardArgs) -> dict:
    """The investigated card's transactions, newest first (amount, merchant and MCC, country,
    channel, device, time, and whether it was labelled fraud), and which one is investigated."""
    investigation = _investigation(args.reference)
    card = investigation.transaction.account
    rows = card.transactions.order_by("-occurred_at", "-id")[:args.limit]
    return {"card": card.account_id, "home_country": card.home_country,
            "investigated": investigation.transaction.transaction_id, "count": card.transactions.count(),
            "transactions": [{"transaction_id": t.transaction_id, "amount": str(t.amount), "currency": t.currency,
                              "merchant": t.merchant, "mcc": t.mcc, "country": t.country, "channel": t.channel,
                              "device_id": t.device_id, "occurred_at": t.occurred_at.isoformat(),
                              "is_fraud": t.is_fraud} for t in rows]}


def get_investigation_record(args: CaseArgs) -> dict:
    """The investigation as recorded: status, severity and confidence, every tool execution
    (step, tool, status, time, output summary or error), the planner's decisions, the insights
    (hypotheses and evidence) and the recommendations with their status."""
    inv = _investigation(args.reference)
    return {
        "reference": inv.case.reference, "status": inv.status, "severity": inv.severity,
        "confidence": inv.confidence_score, "summary": inv.summary, "error": inv.error,
        "tool_executions": [{"step": t.step, "tool": t.tool_name, "status": t.status,
                             "execution_time_ms": t.execution_time_ms, "output": t.output_summary,
                             "error": t.error_message} for t in inv.tool_executions.order_by("step", "id")[:LIMIT]],
        "planner_decisions": [{"step": d.step, "tool": d.selected_tool, "reason": d.reason[:300],
                               "used_fallback": d.used_fallback} for d in inv.planner_decisions.order_by("step")[:LIMIT]],
        "insights": [{"kind": i.kind, "title": i.title, "confidence": i.confidence, "evidence": i.evidence[:5]}
                     for i in inv.insights.all()[:LIMIT]],
        "recommendations": [{"action": r.action, "title": r.title, "status": r.status, "priority": r.priority}
                            for r in inv.recommendations.all()[:LIMIT]],
    }


def fraud_tools() -> tuple[Tool, ...]:
    return (Tool("get_alert_facts", get_alert_facts.__doc__.strip(), CaseArgs, get_alert_facts),
            Tool("get_account_history", get_account_history.__doc__.strip(), CaseArgs, get_account_history),
            Tool("find_similar_cases", find_similar_cases.__doc__.strip(), SimilarArgs, find_similar_cases))


def access_tools() -> tuple[Tool, ...]:
    from agents.pipelines.access_agents.tools import CHECK_AUTHORIZATION, LOOKUP_DATA

    return (CHECK_AUTHORIZATION, LOOKUP_DATA)


def transaction_tools() -> tuple[Tool, ...]:
    return (Tool("get_card_transactions", get_card_transactions.__doc__.strip(), CardArgs, get_card_transactions),
            Tool("get_investigation_record", get_investigation_record.__doc__.strip(), CaseArgs,
                 get_investigation_record))


# --- what each record adds to the conversation's context: the ids its tools take ---------------

def fraud_context(case) -> dict:
    alert = getattr(case, "fraud_alert", None)
    return {} if alert is None else {"alert": {"account_id": alert.account.account_id, **alert.scores}}


def access_context(case) -> dict:
    from agents.pipelines.access_agents.tools import mutation_row

    mutation = getattr(case, "access_change", None)
    return {} if mutation is None else {"mutation": mutation_row(mutation)}


def transaction_context(case) -> dict:
    inv = getattr(case, "txn_investigation", None)
    if inv is None:
        return {}
    txn = inv.transaction
    return {"investigation": {"status": inv.status, "severity": inv.severity, "card": txn.account.account_id,
                              "transaction_id": txn.transaction_id, "amount": str(txn.amount),
                              "currency": txn.currency, "merchant": txn.merchant}}
