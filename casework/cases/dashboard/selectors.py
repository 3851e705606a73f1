"""The dashboard's figures, read from roll-ups (casework/cases/dashboard/rollup.py): counters
kept as cases and decisions are written, so that a render reads the same few hundred rows
whether the history holds a thousand cases or a million (issue 29).

Time series cover the last DASHBOARD_DAYS days (UTC, today included). The figures:

- open cases by type, status and priority, with their age in buckets and the SLA breaches:
  the open-case counters by hour created and hour due (OpenCaseHour), plus one query for the
  cases created in the hours an age boundary cuts and those due earlier this hour, which a
  count by the hour cannot place;
- cases opened, decided and breached per day (CaseDay);
- median and p90 time to decision per type: the number decided from CaseDay; the percentiles
  over the latest TTD_SAMPLE decided cases of each type in the window (an index per type
  reads them), the whole window when it holds fewer;
- agent calls, their error rate and LLM cost per case per day (one GROUP BY on AgentCall, over
  the window by its created_at index: it grows with the calls per month, not the history);
- agreement between agents and people per type: final decisions per day, type and verdict
  (DecisionDay), the verdict computed when the person decided from the type's Recommendation
  hook (casework/cases/types.py); and the latest disagreements, read by their index.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.apps import apps
from django.db import connection
from django.db.models import Count, FloatField, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from casework.cases.models import Case, CaseDay, Decision, DecisionDay, OpenCaseHour
from casework.cases.sla import DONE_STATUSES, sla_breached_q
from casework.cases.types import CASE_TYPES

DASHBOARD_DAYS = 30
DISAGREEMENTS_SHOWN = 25
# Time to decision: percentiles over at most this many of the latest decided cases per type.
TTD_SAMPLE = 500
# Age buckets of open cases: (label, lower bound in hours); the last is open-ended.
AGE_BUCKETS = (("< 1 day", 0), ("1–3 days", 24), ("3–7 days", 72), ("1–4 weeks", 168), ("> 4 weeks", 672))
HOUR = timedelta(hours=1)


def _open() -> Q:
    return ~Q(status__in=DONE_STATUSES)


def _days(since: date, today: date) -> list[date]:
    return [since + timedelta(days=i) for i in range((today - since).days + 1)]


def _hour(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def open_cases(now: datetime) -> dict:
    """By type, status and priority, the age buckets and the breaches: the open-case counters
    (one query) and the cases the hour cannot place (one query)."""
    this_hour = _hour(now)
    # The hours an age boundary cuts in two: their cases are placed one by one. Not the hour
    # "now" cuts: no case was created after now, so all of this hour's are less than a day old.
    cut = {_hour(now - timedelta(hours=hours)) for _label, hours in AGE_BUCKETS[1:]}
    hour_buckets = {}
    for i, (_label, hours) in enumerate(AGE_BUCKETS):
        upper = AGE_BUCKETS[i + 1][1] if i + 1 < len(AGE_BUCKETS) else None
        q = Q(created_hour__lte=now - timedelta(hours=hours)) & ~Q(created_hour__in=cut)
        if upper is not None:
            q &= Q(created_hour__gt=now - timedelta(hours=upper))
        hour_buckets[f"age_{i}"] = Sum("n", filter=q)
    by_type: dict[str, int] = {}
    by_status: dict[str, int] = {}
    by_priority: dict[str, int] = {}
    breached_by_type: dict[str, int] = {}
    ages = [0] * len(AGE_BUCKETS)
    # Summed in the database: the backlog's distinct hours stay there, a few dozen rows come back.
    for row in (OpenCaseHour.objects.exclude(n=0).order_by().values("case_type", "status", "priority")
                .annotate(total=Sum("n"), breached=Sum("n", filter=Q(due_hour__lt=this_hour)), **hour_buckets)):
        case_type, n = row["case_type"], row["total"]
        by_type[case_type] = by_type.get(case_type, 0) + n
        by_status[row["status"]] = by_status.get(row["status"], 0) + n
        by_priority[row["priority"]] = by_priority.get(row["priority"], 0) + n
        breached_by_type[case_type] = breached_by_type.get(case_type, 0) + (row["breached"] or 0)
        for i in range(len(AGE_BUCKETS)):
            ages[i] += row[f"age_{i}"] or 0
    edge = Q()
    for hour in cut:
        edge |= Q(created_at__gte=hour, created_at__lt=hour + HOUR)
    edge_breach = sla_breached_q(now) & Q(due_at__gte=this_hour)
    buckets = {}
    for i, (_label, hours) in enumerate(AGE_BUCKETS):
        upper = AGE_BUCKETS[i + 1][1] if i + 1 < len(AGE_BUCKETS) else None
        q = edge & Q(created_at__lte=now - timedelta(hours=hours))
        if upper is not None:
            q &= Q(created_at__gt=now - timedelta(hours=upper))
        buckets[f"age_{i}"] = Count("pk", filter=q)
    for row in (Case.objects.filter(_open()).filter(edge | Q(due_at__gte=this_hour, due_at__lt=now)).order_by()
                .values("case_type").annotate(breached=Count("pk", filter=edge_breach), **buckets)):
        breached_by_type[row["case_type"]] = breached_by_type.get(row["case_type"], 0) + row["breached"]
        for i in range(len(AGE_BUCKETS)):
            ages[i] += row[f"age_{i}"]
    status_labels = dict(Case.Status.choices)
    priority_labels = dict(Case.Priority.choices)
    return {
        "total": sum(by_type.values()),
        "breached": sum(breached_by_type.get(k, 0) for k in by_type),
        "by_type": [(CASE_TYPES[k].label, by_type[k]) for k in CASE_TYPES if by_type.get(k)],
        "by_status": [(status_labels[k], by_status[k]) for k in Case.Status.values if by_status.get(k)],
        "by_priority": [(priority_labels[k], by_priority.get(k, 0)) for k in Case.Priority.values],
        "breached_by_type": [(CASE_TYPES[k].label, breached_by_type.get(k, 0)) for k in CASE_TYPES
                             if by_type.get(k)],
        "ages": list(zip([label for label, _ in AGE_BUCKETS], ages, strict=True)),
    }


def _window(now: datetime) -> tuple[date, date, datetime]:
    """The first and last day of the window (UTC) and the first day's midnight."""
    today = now.astimezone(UTC).date()
    since_day = today - timedelta(days=DASHBOARD_DAYS - 1)
    return since_day, today, datetime.combine(since_day, datetime.min.time(), tzinfo=UTC)


def case_days(now: datetime) -> list[dict]:
    """The window's day counters by kind, day and type (per_day and time_to_decision share them)."""
    since_day, today, _since = _window(now)
    return list(CaseDay.objects.filter(day__gte=since_day, day__lte=today).order_by()
                .values("kind", "day", "case_type").annotate(n=Sum("n")))


def per_day(now: datetime, days: list[dict] | None = None) -> dict:
    """Cases opened, decided and breached per day: the day counters, one query."""
    since_day, today, _since = _window(now)
    counts: dict[str, dict[date, int]] = {"opened": {}, "decided": {}, "breached": {}}
    for row in case_days(now) if days is None else days:
        by_day = counts[row["kind"]]
        by_day[row["day"]] = by_day.get(row["day"], 0) + row["n"]
    labels = _days(since_day, today)
    return {"labels": [d.isoformat() for d in labels],
            **{kind: [by_day.get(d, 0) for d in labels] for kind, by_day in counts.items()}}


def _hours(value: timedelta | None) -> float | None:
    return round(value.total_seconds() / 3600, 1) if value is not None else None


def _latest_durations(since: datetime) -> dict[str, list[float]]:
    """Hours from creation to decision of the latest TTD_SAMPLE cases of each type decided
    since then: one UNION ALL of one index range per type."""
    table = Case._meta.db_table
    hours = ("EXTRACT(EPOCH FROM closed_at - created_at) / 3600" if connection.vendor == "postgresql"
             else "(julianday(closed_at) - julianday(created_at)) * 24")
    parts, params = [], []
    for i, key in enumerate(CASE_TYPES):
        parts.append(f"SELECT * FROM (SELECT case_type, {hours} AS hours FROM {table} WHERE case_type = %s "
                     f"AND closed_at IS NOT NULL AND closed_at >= %s ORDER BY closed_at DESC LIMIT %s) AS t{i}")
        params += [key, since, TTD_SAMPLE]
    durations: dict[str, list[float]] = {}
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        for case_type, value in cursor.fetchall():
            durations.setdefault(case_type, []).append(float(value))
    return durations


def time_to_decision(now: datetime, days: list[dict] | None = None) -> list[dict]:
    """Per type: the cases decided in the window (the day counters) and the median and p90
    hours from creation to decision of the latest TTD_SAMPLE of them."""
    _since_day, _today, since = _window(now)
    decided: dict[str, int] = {}
    for row in case_days(now) if days is None else days:
        if row["kind"] == "decided":
            decided[row["case_type"]] = decided.get(row["case_type"], 0) + row["n"]
    result = {}
    for case_type, hours in _latest_durations(since).items():
        result[case_type] = {"n": decided.get(case_type) or len(hours), "median": round(_percentile(hours, 0.5), 1),
                             "p90": round(_percentile(hours, 0.9), 1)}
    return [{"type": CASE_TYPES[k].label, **result[k]} for k in CASE_TYPES if k in result]


def _percentile(values: list[float], fraction: float) -> float:
    """Linear interpolation between closest ranks, as PostgreSQL's percentile_cont."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(fraction * 100) - 1]


def agent_costs(now: datetime) -> dict:
    """Agent calls per day: error rate and LLM cost per case. One GROUP BY on AgentCall
    (read by name: the case domain does not import the agents package)."""
    AgentCall = apps.get_model("agents", "AgentCall")
    today = now.date()
    since_day = today - timedelta(days=DASHBOARD_DAYS - 1)
    since = datetime.combine(since_day, datetime.min.time(), tzinfo=now.tzinfo)
    rows = (AgentCall.objects.filter(created_at__gte=since).order_by()
            .annotate(day=TruncDate("created_at")).values("day")
            .annotate(calls=Count("pk"), errors=Count("pk", filter=Q(status="error")),
                      cost=Sum("cost_usd", output_field=FloatField()),
                      cases=Count("run__case", distinct=True)))
    by_day = {row["day"]: row for row in rows}
    days = _days(since_day, today)
    error_rate, cost_per_case = [], []
    for d in days:
        row = by_day.get(d)
        error_rate.append(round(100 * row["errors"] / row["calls"], 1) if row and row["calls"] else None)
        cost_per_case.append(round(float(row["cost"] or 0) / row["cases"], 4) if row and row["cases"] else None)
    calls = sum(r["calls"] for r in by_day.values())
    errors = sum(r["errors"] for r in by_day.values())
    cost = sum(float(r["cost"] or 0) for r in by_day.values())
    return {"labels": [d.isoformat() for d in days], "error_rate": error_rate, "cost_per_case": cost_per_case,
            "calls": calls, "errors": errors, "cost": round(cost, 4),
            "error_rate_total": round(100 * errors / calls, 1) if calls else None}


@dataclass
class Agreement:
    type_label: str
    decided: int
    with_recommendation: int
    agreed: int

    @property
    def rate(self) -> float | None:
        return round(100 * self.agreed / self.with_recommendation) if self.with_recommendation else None


def agreement(now: datetime) -> dict:
    """Per type: the window's final decisions, how many had a clear recommendation from the
    agents, and how many of those agreed with it (the decision counters, one query); and the
    latest disagreements (one query on their index)."""
    types = [ct for ct in CASE_TYPES.values() if ct.recommendation is not None]
    if not types:
        return {"rows": [], "disagreements": []}
    since_day, today, since = _window(now)
    counts: dict[str, dict[str, int]] = {}
    for row in (DecisionDay.objects.filter(day__gte=since_day, day__lte=today, case_type__in=[ct.key for ct in types])
                .order_by().values("case_type", "verdict").annotate(n=Sum("n"))):
        counts.setdefault(row["case_type"], {})[row["verdict"]] = row["n"]
    rows = [Agreement(ct.label, sum(counts[ct.key].values()),
                      counts[ct.key].get("agree", 0) + counts[ct.key].get("disagree", 0), counts[ct.key].get("agree", 0))
            for ct in types if sum(counts.get(ct.key, {}).values())]
    disagreements = []
    for decision in (Decision.objects.filter(final=True, verdict="disagree", decided_at__gte=since)
                     .select_related("case", "decided_by").order_by("-decided_at", "-id")[:DISAGREEMENTS_SHOWN]):
        ct = CASE_TYPES[decision.case.case_type]
        labels = ct.recommendation.labels if ct.recommendation else {}
        disagreements.append({"decision": decision, "case": decision.case, "type_label": ct.label,
                              "recommended": labels.get(decision.recommended, decision.recommended),
                              "decided": decision.outcome_label})
    return {"rows": rows, "disagreements": disagreements}


def manager_panels(user) -> list[dict]:
    """The sections the case types add to a manager's dashboard (casework.cases.types.Panel:
    the access changes' validation requests ...), each with what it lists for this person."""
    return panels_for(user, audience="manager")


def panels_for(user, *, audience: str) -> list[dict]:
    """The sections the case types add for this audience ("manager" or "team")."""
    return [{"id": panel.id, "title": panel.title, "template": panel.template, "rows": panel.rows(user)}
            for ct in CASE_TYPES.values() for panel in ct.dashboard_panels if panel.audience == audience]


def dashboard_figures(*, now: datetime | None = None) -> dict:
    now = now or timezone.now()
    days = case_days(now)
    return {"open": open_cases(now), "per_day": per_day(now, days), "time_to_decision": time_to_decision(now, days),
            "agents": agent_costs(now), "agreement": agreement(now), "days": DASHBOARD_DAYS}
