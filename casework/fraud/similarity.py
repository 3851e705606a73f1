"""Similarity maths: which past confirmed-fraud cases look like this alert, by their features.

`similar_confirmed_cases` finds the past cases decided as confirmed fraud whose alerts look
most like this one, by their 13 features:

1. Each feature is put on a comparable scale: money, counts, days and ratios through
   log1p (a deposit total of 10,000 vs 20,000 differs as much as 100,000 vs 200,000), the
   face-match score and the VPN percentage as they are; then each is divided by a fixed
   reference spread (`Feature.scale` in features.py: the standard deviation of the
   transformed feature over the demo population, rounded).
2. The distance is Euclidean over those 13 standardised values.
3. A case is similar when its distance is at most SIMILAR_MAX_DISTANCE (3.0). On the
   demo population 93% of pairs of the same fraud pattern fall within it, and 0.2% of
   pairs across patterns or between fraud and legitimate accounts.

Fixed reference spreads rather than spreads recomputed from the current data: the
distance between two alerts then never changes because other cases were decided, the
threshold means the same on the first day as after a year, and it works with a single
confirmed case.

The distances are computed in Python over the features of every confirmed-fraud alert,
one query fetching 13 numbers per alert: a few milliseconds for thousands of confirmed
cases. Past roughly 100,000 confirmed cases this wants a vector index (pgvector) instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.db.models import QuerySet

from casework.fraud.features import FEATURE_NAMES, FEATURES
from casework.fraud.models import Alert, KnowledgePattern

SIMILAR_MAX_DISTANCE = 3.0
CONFIRMED_FRAUD = "confirmed_fraud"


def _alerts() -> QuerySet[Alert]:
    return Alert.objects.select_related("account", "case", "case__assignee")


def _vector(values) -> list[float]:
    return [feature.transform(value) / feature.scale for feature, value in zip(FEATURES, values, strict=True)]


def feature_distance(a: dict, b: dict) -> float:
    """Distance between two alerts' features (dicts or Alerts' `.features`)."""
    return math.dist(_vector([a[n] for n in FEATURE_NAMES]), _vector([b[n] for n in FEATURE_NAMES]))


def _confirmed_fraud_alerts(alert: Alert) -> QuerySet[Alert]:
    return (
        Alert.objects.filter(
            case__case_type="fraud_alert",
            case__decisions__outcome=CONFIRMED_FRAUD,
            case__decisions__final=True,
        )
        .exclude(case_id=alert.case_id)
        .distinct()
    )


def _distances(alert: Alert, max_distance: float) -> list[tuple[int, float]]:
    """(alert id, distance) of every confirmed-fraud alert within max_distance, nearest first."""
    origin = _vector([getattr(alert, name) for name in FEATURE_NAMES])
    near = []
    for pk, *values in _confirmed_fraud_alerts(alert).values_list("pk", *FEATURE_NAMES).iterator(chunk_size=2000):
        distance = math.dist(origin, _vector(values))
        if distance <= max_distance:
            near.append((pk, distance))
    near.sort(key=lambda item: (item[1], item[0]))
    return near


def similar_confirmed_cases(
    alert: Alert, *, limit: int = 5, max_distance: float = SIMILAR_MAX_DISTANCE,
) -> list[tuple[Alert, float]]:
    """The nearest past alerts whose cases were decided as confirmed fraud, with distances."""
    near = _distances(alert, max_distance)[:limit]
    alerts = _alerts().in_bulk([pk for pk, _ in near])
    return [(alerts[pk], round(distance, 3)) for pk, distance in near]


def similar_confirmed_count(alert: Alert, *, max_distance: float = SIMILAR_MAX_DISTANCE) -> int:
    """How many past confirmed-fraud cases are similar to this alert."""
    return len(_distances(alert, max_distance))


def similar_confirmed(alert: Alert, *, limit: int = 5, pattern_limit: int = 3,
                      max_distance: float = SIMILAR_MAX_DISTANCE) -> tuple[list[tuple[Alert, float]], int,
                                                                          list[KnowledgePattern]]:
    """Nearest cases, their count and their patterns from ONE scan of the confirmed-fraud
    alerts (the pipeline needs all three for every alert)."""
    near = _distances(alert, max_distance)
    alerts = _alerts().in_bulk([pk for pk, _ in near[:limit]])
    cases = [(alerts[pk], round(distance, 3)) for pk, distance in near[:limit]]
    wanted = [a.case_id for a, _ in cases[:pattern_limit]]
    found = {p.case_id: p for p in KnowledgePattern.objects.select_related("case", "account")
             .filter(case_id__in=wanted)}
    return cases, len(near), [found[case_id] for case_id in wanted if case_id in found]


def similar_confirmed_patterns(alert: Alert, *, limit: int = 3) -> list[KnowledgePattern]:
    """The knowledge patterns captured on the nearest similar confirmed-fraud cases, nearest
    first (for outcome_similarity's explanation and the Similar Cases tab)."""
    near = [similar.case_id for similar, _ in similar_confirmed_cases(alert, limit=limit)]
    found = {p.case_id: p for p in KnowledgePattern.objects.select_related("case", "account")
             .filter(case_id__in=near)}
    return [found[case_id] for case_id in near if case_id in found]


# Outcomes a person gave that say "not fraud": a look-alike of one of these is less likely fraud.
CLEARED_OUTCOMES = ("legit", "false_positive")
CLEARED_LABELS = {"legit": "marked legit", "false_positive": "dismissed as false positive"}


@dataclass(frozen=True)
class Lookalike:
    """A past decided alert near this one: enough to name it to an agent or a person."""

    case_id: int
    reference: str
    account_id: str
    distance: float


@dataclass(frozen=True)
class PatternSaid:
    """What a knowledge pattern captured on a past case says (KnowledgePattern's fields)."""

    case_id: int
    behavioral_pattern: str
    one_sentence_description: str


@dataclass(frozen=True)
class Lookalikes:
    """What the pipeline shows its agents about past decided look-alikes of one alert."""

    confirmed: list[Lookalike]  # nearest confirmed-fraud cases, up to `limit`
    confirmed_count: int  # all confirmed-fraud cases within the distance
    patterns: list[PatternSaid]  # captured on the nearest `pattern_limit` of them
    cleared: list[dict]  # nearest cleared cases, up to `limit`, each with its decision
    cleared_count: int


def similar_decided(alert: Alert, *, limit: int = 5, pattern_limit: int = 3,
                    max_distance: float = SIMILAR_MAX_DISTANCE) -> Lookalikes:
    """similar_confirmed and similar_cleared from ONE scan of the final fraud decisions (13
    numbers, an outcome, a reference and an account id per decided alert, read as a plain
    list: no server-side cursor, no model instances), then the nearest cleared cases'
    decisions and the nearest confirmed cases' patterns: at most three queries per pipeline
    run at any history size. (Building model instances through select_related for the
    nearest alerts cost a fraud run about 5 ms of CPU, a quarter of a busy worker's samples;
    bench/README.md.)"""
    from casework.cases.models import Decision

    origin = _vector([getattr(alert, name) for name in FEATURE_NAMES])
    rows = (Decision.objects.filter(final=True, case__case_type="fraud_alert",
                                    outcome__in=(CONFIRMED_FRAUD, *CLEARED_OUTCOMES),
                                    case__fraud_alert__isnull=False)
            .exclude(case_id=alert.case_id)
            .values_list("case_id", "case__reference", "case__fraud_alert__account__account_id", "outcome",
                         *[f"case__fraud_alert__{n}" for n in FEATURE_NAMES]))
    confirmed, cleared = [], []
    for case_id, reference, account_id, outcome, *values in rows:
        distance = math.dist(origin, _vector(values))
        if distance <= max_distance:
            near = Lookalike(case_id, reference, account_id, round(distance, 3))
            (confirmed if outcome == CONFIRMED_FRAUD else cleared).append((distance, case_id, near))
    confirmed.sort(key=lambda item: item[:2])
    cleared.sort(key=lambda item: item[:2])
    nearest = [near for _, _, near in confirmed[:limit]]
    wanted = [near.case_id for near in nearest[:pattern_limit]]
    patterns = {row[0]: PatternSaid(*row) for row in KnowledgePattern.objects.filter(case_id__in=wanted)
                .values_list("case_id", "behavioral_pattern", "one_sentence_description")} if wanted else {}
    shown_cleared = [near for _, _, near in cleared[:limit]]
    decisions = {row[0]: row for row in Decision.objects.filter(
        final=True, case_id__in=[near.case_id for near in shown_cleared])
        .values_list("case_id", "outcome", "decided_by__username", "decided_at", "reason")} if shown_cleared else {}
    shown = []
    for near in shown_cleared:
        if near.case_id not in decisions:
            continue
        _, outcome, decided_by, decided_at, reason = decisions[near.case_id]
        shown.append({"reference": near.reference, "account_id": near.account_id, "distance": near.distance,
                      "outcome": outcome, "outcome_label": CLEARED_LABELS.get(outcome, outcome),
                      "decided_by": decided_by or "system", "decided_at": decided_at.isoformat(),
                      "reason": reason[:300]})
    return Lookalikes(confirmed=nearest, confirmed_count=len(confirmed),
                      patterns=[patterns[case_id] for case_id in wanted if case_id in patterns],
                      cleared=shown, cleared_count=len(cleared))


def similar_cleared(alert: Alert, *, limit: int = 5,
                    max_distance: float = SIMILAR_MAX_DISTANCE) -> tuple[list[dict], int]:
    """Past look-alikes a person cleared (marked legit or dismissed as a false positive),
    nearest first, each with its decision: (up to `limit` of them, how many in all). Knowledge
    capture learns from every outcome; these lower the next look-alike's fraud likelihood."""
    found = similar_decided(alert, limit=limit, pattern_limit=0, max_distance=max_distance)
    return found.cleared, found.cleared_count


def known_fraud_links(account) -> list[dict]:
    """Accounts that share a device or an IP address with this one and whose fraud case a
    person confirmed, each with what they share: what the network agent's known_fraud_links
    counts. Two queries (the shared identifiers, then the confirmed accounts among them)."""
    from casework.fraud.models import AccountLink

    mine = list(AccountLink.objects.filter(account=account).values_list("kind", "value"))
    if not mine:
        return []
    shared: dict[int, set[str]] = {}
    others = AccountLink.objects.none()
    for kind in ("device", "ip"):
        values = [v for k, v in mine if k == kind]
        if values:
            others = others | AccountLink.objects.filter(kind=kind, value__in=values).exclude(account=account)
    for account_id, kind, value in others.values_list("account_id", "kind", "value"):
        shared.setdefault(account_id, set()).add(f"{'device' if kind == 'device' else 'IP'} {value}")
    confirmed = (Alert.objects.filter(account_id__in=list(shared), case__decisions__final=True,
                                      case__decisions__outcome=CONFIRMED_FRAUD)
                 .select_related("account", "case").order_by("account__account_id").distinct())
    seen: dict[int, dict] = {}
    for alert in confirmed:
        seen.setdefault(alert.account_id, {"account_id": alert.account.account_id, "reference": alert.case.reference,
                                           "shares": sorted(shared[alert.account_id])})
    return list(seen.values())
