"""Reads for transaction investigations: the investigation behind a case, the page's view
model, promoted rules."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from casework.cases.models import Case
from casework.cases.visibility import visible_q
from casework.people.roles import ADMIN, MANAGER, user_roles
from casework.transactions.analysis import load_history, txn_row
from casework.transactions.models import Investigation, RuleDraft
from casework.transactions.states import ACTIVE, TXN_LIFECYCLE

HISTORY_SHOWN = 40


def investigation_list(user=None) -> QuerySet[Investigation]:
    """Investigations, joined; with `user`, only those of the cases this person may see
    (casework.cases.visibility): every list a person reads passes them."""
    investigations = Investigation.objects.select_related("case", "case__assignee", "transaction",
                                                          "transaction__account")
    return investigations if user is None else investigations.filter(visible_q(user, "case__"))


def rule_draft_to_promote(user, reference: str) -> RuleDraft:
    """The rule drafted on this case, for a manager or admin to promote: promoting is not
    working the case (managers work none), but it shows the case, so the case must be inside
    their need-to-know (casework.cases.visibility); any other is a 404, as a missing one."""
    return get_object_or_404(RuleDraft.objects.filter(visible_q(user, "investigation__case__"))
                             .select_related("investigation__case"),
                             investigation__case__reference=reference.upper())


def investigation_get_for_case(case: Case) -> Investigation | None:
    return investigation_list().filter(case=case).first()


def investigation_get(reference: str) -> Investigation | None:
    return investigation_list().filter(case__reference=reference).first()


def investigation_page(investigation: Investigation, user) -> dict:
    """Everything the case page shows, read once: the verdict, the history with the flagged
    rows marked, similar investigations, the two timelines, recommendations, the rule."""
    state = investigation.state or {}
    txn = investigation.transaction
    flagged = set((state.get("pattern_results") or {}).get("flagged_transaction_ids", []))
    history = [{**row, "flagged": row["transaction_id"] in flagged} for row in load_history(txn)[:HISTORY_SHOWN]]
    reasoning = state.get("reasoning") or {}
    rule = RuleDraft.objects.filter(investigation=investigation).select_related("promoted_by").first()
    stalled_run = _stalled_run(investigation)
    return {
        "investigation": investigation,
        "active": investigation.status in ACTIVE and stalled_run is None,
        # The run ended (failed, e.g. an error writing results) while the investigation
        # still says PENDING/IN_PROGRESS: show it as failed, with the run's error; resumable.
        "stalled_run": stalled_run,
        # What the status means (the lifecycle's own words), and where code overrode the planner.
        "status_meaning": TXN_LIFECYCLE.state(investigation.status).meaning,
        "overrides": state.get("overrides", []),
        "transaction": txn_row(txn) | {"account_id": txn.account.account_id, "card_last4": txn.card_last4,
                                       "home_country": txn.account.home_country},
        "history": history,
        "flagged_count": len(flagged),
        "patterns": (state.get("pattern_results") or {}).get("patterns", []),
        "hypotheses": reasoning.get("hypotheses", [])[:3],
        "similar": _similar_shown((state.get("similarity_results") or {}).get("matches", []), user),
        "similarity_done": "similarity_tool" in state.get("completed_steps", []),
        "decisions": list(investigation.planner_decisions.all()),
        "executions": list(investigation.tool_executions.all()),
        "recommendations": list(investigation.recommendations.select_related("decided_by")),
        "rule": rule,
        "may_promote": bool(user_roles(user) & {MANAGER, ADMIN}),
        **_rule_hits(investigation.case),
    }


def _similar_shown(matches: list, user) -> list:
    """The similarity step's matches that this person may see: the pipeline compared every past
    investigation; the page shows only the cases of the person's teams."""
    from casework.cases.visibility import references_visible

    visible = references_visible(user, [m.get("reference") for m in matches if isinstance(m, dict)])
    return [m for m in matches if isinstance(m, dict) and str(m.get("reference", "")).upper() in visible]


HITS_SHOWN = 200


def _rule_hits(case) -> dict:
    """The detection-rule hits that opened or joined this case, oldest first (capped)."""
    from casework.transactions.monitoring.models import RuleHit

    hits = (RuleHit.objects.filter(case=case).select_related("version__rule", "transaction")
            .order_by("created_at", "id"))
    shown = list(hits[:HITS_SHOWN])
    return {"rule_hits": shown,
            "rule_hits_count": len(shown) if len(shown) < HITS_SHOWN else hits.count()}


def _stalled_run(investigation: Investigation):
    from agents.models import AgentRun

    if investigation.status not in ACTIVE:
        return None
    latest = AgentRun.objects.filter(case_id=investigation.case_id, pipeline="transactions").order_by("-id").first()
    if latest is None or latest.status in AgentRun.ACTIVE:
        return None
    return latest
