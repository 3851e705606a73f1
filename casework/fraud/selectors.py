"""Reads for fraud alerts: the alert behind a case, captured patterns.

The similarity maths live in casework/fraud/similarity.py, the case page's view model in
casework/fraud/assessment.py, the thresholds in casework/fraud/thresholds.py; the names
callers use are re-exported here.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet

from casework.cases.visibility import visible_q
from casework.fraud.assessment import (
    AGENT_LABELS,
    ASSESSMENT_MODES,
    SPECIALIST_KEYS,
    SPECIALIST_NAMES,
    agent_result,
    alert_get_for_case,
    assessment_run_latest,
    close_run_latest,
    fraud_assessment,
    pattern_for_case,
)
from casework.fraud.models import Alert, KnowledgePattern
from casework.fraud.similarity import (
    CONFIRMED_FRAUD,
    SIMILAR_MAX_DISTANCE,
    feature_distance,
    known_fraud_links,
    similar_cleared,
    similar_confirmed,
    similar_confirmed_cases,
    similar_confirmed_count,
    similar_confirmed_patterns,
    similar_decided,
)

__all__ = [
    "AGENT_LABELS", "ASSESSMENT_MODES", "CONFIRMED_FRAUD", "SIMILAR_MAX_DISTANCE", "SPECIALIST_KEYS",
    "SPECIALIST_NAMES", "agent_result", "alert_get_for_case", "alert_list", "assessment_run_latest",
    "close_run_latest", "feature_distance", "fraud_assessment", "known_fraud_links", "pattern_for_case", "patterns_search",
    "similar_cleared", "similar_confirmed", "similar_confirmed_cases", "similar_confirmed_count", "similar_confirmed_patterns", "similar_decided",
]


def alert_list(user) -> QuerySet[Alert]:
    """The alerts of the cases this person may see (casework.cases.visibility)."""
    return Alert.objects.filter(visible_q(user, "case__")).select_related("account", "case", "case__assignee")


def patterns_search(user, q: str = "") -> QuerySet[KnowledgePattern]:
    """Captured knowledge patterns of the cases this person may see, newest first; every word
    of `q` must appear somewhere (signals, behavioural pattern, description, outcome, account
    or case reference)."""
    patterns = KnowledgePattern.objects.filter(visible_q(user, "case__")).select_related(
        "case", "account", "decision", "decision__decided_by",
    )
    for word in (q or "").split()[:10]:
        patterns = patterns.filter(
            Q(key_signals__icontains=word)
            | Q(behavioral_pattern__icontains=word)
            | Q(one_sentence_description__icontains=word)
            | Q(final_outcome__icontains=word)
            | Q(account__account_id__icontains=word)
            | Q(case__reference__icontains=word)
        )
    return patterns
