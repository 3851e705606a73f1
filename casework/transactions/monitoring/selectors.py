"""Reads for the rules page and API: each rule's versions, and each version's measured
performance (hits per day, cases opened, precision from people's decisions)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db.models import Count, OuterRef, Prefetch, Q, Subquery
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from casework.transactions.monitoring.models import DetectionRule, RuleHit, RuleVersion

CHART_DAYS = 14


@dataclass
class VersionStats:
    hits: int = 0
    hits_recent: int = 0
    cases_opened: int = 0
    fraud: int = 0
    not_fraud: int = 0
    per_day: dict[date, int] = field(default_factory=dict)

    @property
    def decided(self) -> int:
        return self.fraud + self.not_fraud

    @property
    def precision(self) -> float | None:
        return round(self.fraud / self.decided, 3) if self.decided else None

    @property
    def hits_per_day(self) -> float:
        return round(self.hits_recent / CHART_DAYS, 1)


def _outcomes():
    """Each hit's outcome as people decided it: a chargeback is fraud; otherwise the final
    decision of the case the hit opened or joined (live), or of the case that investigated its
    transaction (shadow hits, and live ones let through)."""
    from casework.cases.models import Decision

    of_case = Decision.objects.filter(final=True, case_id=OuterRef("case_id")).values("outcome")[:1]
    of_txn = Decision.objects.filter(final=True, case__txn_investigation__transaction_id=OuterRef("transaction_id")
                                     ).values("outcome")[:1]
    return Coalesce(Subquery(of_case), Subquery(of_txn))


def version_stats(versions: list[RuleVersion], *, now: datetime | None = None) -> dict[int, VersionStats]:
    """Three grouped queries for any number of versions."""
    now = now or timezone.now()
    ids = [v.pk for v in versions]
    stats = {pk: VersionStats() for pk in ids}
    since = now - timedelta(days=CHART_DAYS)
    hits = RuleHit.objects.filter(version_id__in=ids)
    for row in hits.values("version_id").annotate(
            n=Count("id"), opened=Count("id", filter=Q(opened_case=True)),
            recent=Count("id", filter=Q(created_at__gte=since))):
        s = stats[row["version_id"]]
        s.hits, s.cases_opened, s.hits_recent = row["n"], row["opened"], row["recent"]
    for row in (hits.filter(created_at__gte=since).annotate(day=TruncDate("created_at"))
                .values("version_id", "day").annotate(n=Count("id"))):
        stats[row["version_id"]].per_day[row["day"]] = row["n"]
    for row in (hits.annotate(outcome=_outcomes()).filter(Q(outcome__in=("fraud", "not_fraud"))
                                                          | Q(transaction__is_fraud=True))
                .values("version_id", "outcome", "transaction__is_fraud").annotate(n=Count("id"))):
        s = stats[row["version_id"]]
        if row["transaction__is_fraud"] or row["outcome"] == "fraud":
            s.fraud += row["n"]
        else:
            s.not_fraud += row["n"]
    return stats


def rules_with_versions():
    return (DetectionRule.objects.select_related("created_by", "drafted_from__investigation__case")
            .prefetch_related(Prefetch("versions", queryset=RuleVersion.objects.select_related(
                "author", "approver").order_by("-number"))))


def chart(stats: list[tuple[RuleVersion, VersionStats]], *, now: datetime | None = None) -> dict:
    """Bars of hits per day over CHART_DAYS days, live and shadow side by side, as SVG
    coordinates for the template (no script: the page's CSP allows none inline)."""
    now = now or timezone.now()
    days = [(now - timedelta(days=n)).date() for n in range(CHART_DAYS - 1, -1, -1)]
    live, shadow = defaultdict(int), defaultdict(int)
    for version, s in stats:
        target = live if version.mode == RuleVersion.Mode.LIVE else shadow
        for day, n in s.per_day.items():
            target[day] += n
    top = max([*live.values(), *shadow.values(), 1])
    width, height, step = 420, 90, 30
    bars = []
    for i, day in enumerate(days):
        for offset, kind, count in ((2, "live", live[day]), (14, "shadow", shadow[day])):
            h = round(count / top * (height - 10))
            bars.append({"x": i * step + offset, "y": height - h, "h": h, "kind": kind, "count": count,
                         "day": day})
    return {"bars": bars, "width": width, "height": height, "top": top, "first": days[0], "last": days[-1],
            "total_live": sum(live.values()), "total_shadow": sum(shadow.values())}


def rules_page(user, *, now: datetime | None = None) -> list[dict]:
    """Every rule with its versions, stats and chart; the case a rule was drafted on is named
    only to people who may see that case (casework.cases.visibility): rules are everyone's,
    the case behind one is not."""
    from casework.cases.visibility import case_visible

    now = now or timezone.now()
    rules = list(rules_with_versions())
    versions = [v for rule in rules for v in rule.versions.all()]
    stats = version_stats(versions, now=now)
    page = []
    for rule in rules:
        rows = [(v, stats[v.pk]) for v in rule.versions.all()]
        active = next((v for v in rule.versions.all() if v.status == RuleVersion.Status.ACTIVE), None)
        drafted = rule.drafted_from.investigation.case if rule.drafted_from_id else None
        page.append({"rule": rule, "versions": rows, "active": active, "chart": chart(rows, now=now),
                     "drafted_case": drafted if drafted is not None and case_visible(user, drafted) else None})
    return page
