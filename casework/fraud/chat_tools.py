"""What a fraud alert adds to "Ask the agent" (agents.chat), registered on its CaseType
(casework.cases.types.case_type_register_chat): three read-only tools, get_alert_facts (the
alert's 13 features and its scores), get_account_history (the account's other alerts and their
decisions, its device / IP links, linked accounts whose fraud a person confirmed) and
find_similar_cases (the nearest past cases a person confirmed as fraud or cleared, by feature
distance); and the alert's scores in the conversation's context.

Every handler reads only and takes the case reference; "Ask the agent" runs them for the person
who asked (agents.chat.asker), so a question about another alert works as their access allows,
and the other cases they list are those the person may see.
"""

from __future__ import annotations

from pydantic import Field

from agents.chat.asker import asker
from agents.chat.context import CaseArgs
from agents.runtime.tools import Tool

LIMIT = 50


class SimilarArgs(CaseArgs):
    limit: int = Field(default=5, ge=1, le=20, description="How many of each kind, nearest first.")


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
    from casework.cases.visibility import cases_visible_to, references_visible
    from casework.fraud.models import Alert
    from casework.fraud.similarity import known_fraud_links

    alert = _alert(args.reference)
    viewer = asker()
    others = list(Alert.objects.filter(account=alert.account, case__in=cases_visible_to(viewer)).exclude(pk=alert.pk)
                  .select_related("case").order_by("-created_at", "-id")[:20])
    decisions = {d.case_id: d for d in Decision.objects.filter(final=True, case_id__in=[a.case_id for a in others])}
    links = known_fraud_links(alert.account)
    shown = references_visible(viewer, [link["reference"] for link in links])
    return {
        "account_id": alert.account.account_id,
        "other_alerts": [{"reference": a.case.reference, "created_at": a.created_at.isoformat(),
                          "risk_level": a.risk_level, "fraud_probability": a.fraud_probability,
                          "case_status": a.case.status,
                          "decision": decisions[a.case_id].outcome if a.case_id in decisions else None}
                         for a in others],
        "links": [{"kind": link.kind, "value": link.value} for link in alert.account.links.all()[:LIMIT]],
        "confirmed_fraud_links": [link for link in links if link["reference"] in shown],
    }


def find_similar_cases(args: SimilarArgs) -> dict:
    """Past alerts that look like this one (feature distance at most 3.0) whose cases a person
    decided: confirmed fraud (with the pattern captured) and cleared (legit / false positive).
    Decided alerts a person linked to this one come first, at any distance, with `linked_as`
    (related, duplicate, parent, child)."""
    from casework.cases.visibility import references_visible
    from casework.fraud.similarity import similar_decided

    alert = _alert(args.reference)
    found = similar_decided(alert, limit=args.limit)
    patterns = {p.case_id: p.one_sentence_description for p in found.patterns}
    # Only the look-alikes the person asking may see, and counted as they see them.
    shown = references_visible(asker(), [n.reference for n in found.confirmed] + [c["reference"] for c in found.cleared])
    confirmed = [near for near in found.confirmed if near.reference in shown]
    cleared = [c for c in found.cleared if c["reference"] in shown]
    return {
        "reference": alert.case.reference,
        "confirmed_count": found.confirmed_count - (len(found.confirmed) - len(confirmed)),
        "confirmed": [{"reference": near.reference, "account_id": near.account_id,
                       "distance": near.distance, "pattern": patterns.get(near.case_id, ""),
                       **({"linked_as": near.link} if near.link else {})}
                      for near in confirmed],
        "cleared_count": found.cleared_count - (len(found.cleared) - len(cleared)), "cleared": cleared,
    }


def fraud_chat_tools() -> tuple[Tool, ...]:
    return (Tool("get_alert_facts", get_alert_facts.__doc__.strip(), CaseArgs, get_alert_facts, consequence="read_only"),
            Tool("get_account_history", get_account_history.__doc__.strip(), CaseArgs, get_account_history,
                 consequence="read_only"),
            Tool("find_similar_cases", find_similar_cases.__doc__.strip(), SimilarArgs, find_similar_cases,
                 consequence="read_only"))


def fraud_chat_context(case) -> dict:
    alert = getattr(case, "fraud_alert", None)
    return {} if alert is None else {"alert": {"account_id": alert.account.account_id, **alert.scores}}
