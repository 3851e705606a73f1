"""The dashboard's figures, each one SQL aggregate (a handful of queries whatever the data size).

Time series cover the last DASHBOARD_DAYS days (UTC). The figures:

- open cases by type, status and priority, with their age in buckets and the SLA breaches,
  from one GROUP BY over the open cases;
- cases opened, decided and breached per day (three GROUP BYs in one UNION ALL);
- median and p90 time to decision per type: percentile_cont in PostgreSQL; SQLite has no
  percentile aggregate, so there one query reads only the durations of the window's decided
  cases (two timestamps a row) and the percentiles are computed here;
- agent calls, their error rate and LLM cost per case per day (one GROUP BY on AgentCall);
- agreement between agents and people per type: each type's Recommendation hook
  (casework/cases/types.py) gives the agents' recommendation as SQL, so the agreement is one
  GROUP BY over the window's final decisions and the disagreements one more query.

Every figure is over the cases the person may see (casework.cases.visibility: their teams'
types, restricted cases only for their named people; admins every case): `dashboard_figures`
takes the person, and each part its `user`. A part called without one (None) counts every case:
the operator's benchmark (bench/growth.py), never a page. Nothing here is cached, so no figure
computed for one person is shown to another.
"""

from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.apps import apps
from django.db import connection
from django.db.models import (
    Aggregate,
    CharField,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models import Case as CaseWhen
from django.db.models.functions import TruncDate
from django.utils import timezone

from casework.cases.models import Case, Decision
from casework.cases.sla import DONE_STATUSES, sla_breached_q
from casework.cases.types import CASE_TYPES
from casework.cases.visibility import case_type_visible, visible_q

DASHBOARD_DAYS = 30
DISAGREEMENTS_SHOWN = 25
# Age buckets of open cases: (label, lower bound in hours); the last is open-ended.
AGE_BUCKETS = (("< 1 day", 0), ("1–3 days", 24), ("3–7 days", 72), ("1–4 weeks", 168), ("> 4 weeks", 672))


class PercentileCont(Aggregate):
    """PostgreSQL's percentile_cont(f) WITHIN GROUP (ORDER BY expr)."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    allow_distinct = False

    def __init__(self, expression, fraction: float, **extra):
        super().__init__(expression, fraction=float(fraction), output_field=DurationField(), **extra)


def _scope(user, prefix: str = "") -> Q:
    """The person's rule (visible_q) as a filter, or none for an operator's call without a person."""
    return Q() if user is None else visible_q(user, prefix)


def _cases(user):
    return Case.objects.filter(_scope(user))


def _open() -> Q:
    return ~Q(status__in=DONE_STATUSES)


def _days(since: date, today: date) -> list[date]:
    return [since + timedelta(days=i) for i in range((today - since).days + 1)]


def open_cases(now: datetime, *, user=None) -> dict:
    """By type, status and priority, the age buckets and the breaches: one query."""
    buckets = {}
    for i, (_label, hours) in enumerate(AGE_BUCKETS):
        upper = AGE_BUCKETS[i + 1][1] if i + 1 < len(AGE_BUCKETS) else None
        q = Q(created_at__lte=now - timedelta(hours=hours))
        if upper is not None:
            q &= Q(created_at__gt=now - timedelta(hours=upper))
        buckets[f"age_{i}"] = Count("pk", filter=q)
    rows = list(_cases(user).filter(_open()).order_by().values("case_type", "status", "priority")
                .annotate(n=Count("pk"), breached=Count("pk", filter=sla_breached_q(now)), **buckets))
    by_type: dict[str, int] = {}
    by_status: dict[str, int] = {}
    by_priority: dict[str, int] = {}
    breached_by_type: dict[str, int] = {}
    ages = [0] * len(AGE_BUCKETS)
    for row in rows:
        by_type[row["case_type"]] = by_type.get(row["case_type"], 0) + row["n"]
        by_status[row["status"]] = by_status.get(row["status"], 0) + row["n"]
        by_priority[row["priority"]] = by_priority.get(row["priority"], 0) + row["n"]
        breached_by_type[row["case_type"]] = breached_by_type.get(row["case_type"], 0) + row["breached"]
        for i in range(len(AGE_BUCKETS)):
            ages[i] += row[f"age_{i}"]
    status_labels = dict(Case.Status.choices)
    priority_labels = dict(Case.Priority.choices)
    return {
        "total": sum(by_type.values()),
        "breached": sum(breached_by_type.values()),
        "by_type": [(CASE_TYPES[k].label, by_type[k]) for k in CASE_TYPES if k in by_type],
        "by_status": [(status_labels[k], by_status[k]) for k in Case.Status.values if k in by_status],
        "by_priority": [(priority_labels[k], by_priority.get(k, 0)) for k in Case.Priority.values],
        "breached_by_type": [(CASE_TYPES[k].label, breached_by_type.get(k, 0)) for k in CASE_TYPES if k in by_type],
        "ages": list(zip([label for label, _ in AGE_BUCKETS], ages, strict=True)),
    }


def _per_day(queryset, field: str, kind: str, since: datetime):
    return (queryset.filter(**{f"{field}__gte": since}).order_by()
            .annotate(day=TruncDate(field), kind=Value(kind, output_field=CharField()))
            .values("kind", "day").annotate(n=Count("pk")))


def per_day(now: datetime, *, user=None) -> dict:
    """Cases opened, decided and breached per day: three GROUP BYs in one UNION ALL."""
    today = now.date()
    since_day = today - timedelta(days=DASHBOARD_DAYS - 1)
    since = datetime.combine(since_day, datetime.min.time(), tzinfo=now.tzinfo)
    cases = _cases(user)
    rows = _per_day(cases, "created_at", "opened", since).union(
        _per_day(cases.filter(closed_at__isnull=False), "closed_at", "decided", since),
        _per_day(cases.filter(sla_breached_at__isnull=False), "sla_breached_at", "breached", since),
        all=True)
    counts: dict[str, dict[date, int]] = {"opened": {}, "decided": {}, "breached": {}}
    for row in rows:
        counts[row["kind"]][row["day"]] = row["n"]
    days = _days(since_day, today)
    return {"labels": [d.isoformat() for d in days],
            **{kind: [by_day.get(d, 0) for d in days] for kind, by_day in counts.items()}}


def _hours(value: timedelta | None) -> float | None:
    return round(value.total_seconds() / 3600, 1) if value is not None else None


def time_to_decision(now: datetime, *, user=None) -> list[dict]:
    """Median and p90 hours from creation to decision per type, over the window's decided cases."""
    since = now - timedelta(days=DASHBOARD_DAYS)
    decided = _cases(user).filter(closed_at__gte=since).order_by()
    duration = ExpressionWrapper(F("closed_at") - F("created_at"), output_field=DurationField())
    result = {}
    if connection.vendor == "postgresql":
        for row in decided.values("case_type").annotate(n=Count("pk"), median=PercentileCont(duration, 0.5),
                                                         p90=PercentileCont(duration, 0.9)):
            result[row["case_type"]] = {"n": row["n"], "median": _hours(row["median"]), "p90": _hours(row["p90"])}
    else:
        # SQLite: no percentile aggregate; one query reads the durations' two timestamps only.
        durations: dict[str, list[float]] = {}
        for case_type, created, closed in decided.values_list("case_type", "created_at", "closed_at"):
            durations.setdefault(case_type, []).append((closed - created).total_seconds() / 3600)
        for case_type, hours in durations.items():
            result[case_type] = {"n": len(hours), "median": round(_percentile(hours, 0.5), 1),
                                 "p90": round(_percentile(hours, 0.9), 1)}
    return [{"type": CASE_TYPES[k].label, **result[k]} for k in CASE_TYPES if k in result]


def _percentile(values: list[float], fraction: float) -> float:
    """Linear interpolation between closest ranks, as PostgreSQL's percentile_cont."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(fraction * 100) - 1]


def agent_costs(now: datetime, *, user=None) -> dict:
    """Agent calls per day: error rate and LLM cost per case. One GROUP BY on AgentCall
    (read by name: the case domain does not import the agents package). A person sees the calls
    of runs on cases they may see (runs on no case yet, a support intake's, are an operator's)."""
    AgentCall = apps.get_model("agents", "AgentCall")
    today = now.date()
    since_day = today - timedelta(days=DASHBOARD_DAYS - 1)
    since = datetime.combine(since_day, datetime.min.time(), tzinfo=now.tzinfo)
    calls = AgentCall.objects.filter(created_at__gte=since)
    if user is not None:
        calls = calls.filter(visible_q(user, "run__case__"), run__case__isnull=False)
    rows = (calls.order_by()
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


def _verdict(ct) -> Subquery:
    """'agree' or 'disagree' for a decision on a case of this type, NULL without a clear
    recommendation: the type's latest recommendation record, compared inside the subquery
    with the outer decision's outcome (so the outer query names it once)."""
    agree = Q(pk__in=[])
    for rec, outcomes in ct.recommendation.agrees.items():
        agree |= Q(rec=rec, decided_outcome__in=outcomes)
    outcome = ExpressionWrapper(OuterRef("outcome"), output_field=CharField())
    records = (ct.recommendation.records(OuterRef("case_id")).annotate(decided_outcome=outcome)
               .annotate(verdict=CaseWhen(When(agree, then=Value("agree")),
                                          When(rec__isnull=False, then=Value("disagree")),
                                          default=Value(None), output_field=CharField())))
    return Subquery(records.values("verdict")[:1], output_field=CharField())


def _recommendation(ct) -> Subquery:
    return Subquery(ct.recommendation.records(OuterRef("case_id")).values("rec")[:1], output_field=CharField())


def _per_type(types, make) -> CaseWhen:
    return CaseWhen(*[When(case__case_type=ct.key, then=make(ct)) for ct in types], default=Value(None),
                    output_field=CharField())


@contextlib.contextmanager
def _index_lookups_priced_as_they_are():
    """On PostgreSQL, random_page_cost 1.1 for the queries inside (then set back, in two
    statements, no transaction needed): the window's few hundred final decisions each look up
    their case by primary key, but at the default of 4 the planner reads every case into a
    hash join instead (15 and 42 ms at 10^5 cases, growing with the history, against 3 ms;
    bench/growth.py)."""
    if connection.vendor != "postgresql":
        yield
        return
    from psycopg.pq import TransactionStatus

    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('random_page_cost'), set_config('random_page_cost', '1.1', false)")
        (before, _) = cursor.fetchone()
        try:
            yield
        finally:
            # In a transaction a failed query aborted, the rollback undoes the setting too (and
            # a statement now would hide the failure behind "transaction is aborted").
            if connection.connection.info.transaction_status != TransactionStatus.INERROR:
                cursor.execute("SELECT set_config('random_page_cost', %s, false)", [before])


def agreement(now: datetime, *, user=None) -> dict:
    """Per type: the window's final decisions, how many had a clear recommendation from the
    agents, and how many of those agreed with it (one GROUP BY type and verdict); and the
    latest disagreements (one query)."""
    types = [ct for ct in CASE_TYPES.values() if ct.recommendation is not None]
    if not types:
        return {"rows": [], "disagreements": []}
    with _index_lookups_priced_as_they_are():
        return _agreement(now, types, user)


def _agreement(now: datetime, types: list, user) -> dict:
    decisions = (Decision.objects.filter(_scope(user, "case__"), final=True,
                                         decided_at__gte=now - timedelta(days=DASHBOARD_DAYS))
                 .annotate(verdict=_per_type(types, _verdict)))
    counts: dict[str, dict[str | None, int]] = {}
    for row in decisions.order_by().values("case__case_type", "verdict").annotate(n=Count("pk")):
        counts.setdefault(row["case__case_type"], {})[row["verdict"]] = row["n"]
    rows = [Agreement(ct.label, sum(counts[ct.key].values()),
                      counts[ct.key].get("agree", 0) + counts[ct.key].get("disagree", 0), counts[ct.key].get("agree", 0))
            for ct in types if ct.key in counts]
    disagreements = []
    for decision in (decisions.filter(verdict="disagree").annotate(recommended=_per_type(types, _recommendation))
                     .select_related("case", "decided_by").order_by("-decided_at", "-id")[:DISAGREEMENTS_SHOWN]):
        ct = CASE_TYPES[decision.case.case_type]
        disagreements.append({"decision": decision, "case": decision.case, "type_label": ct.label,
                              "recommended": ct.recommendation.labels.get(decision.recommended, decision.recommended),
                              "decided": decision.outcome_label})
    return {"rows": rows, "disagreements": disagreements}


def manager_panels(user) -> list[dict]:
    """The sections the case types add to a manager's dashboard (casework.cases.types.Panel:
    the access changes' validation requests ...), each with what it lists for this person."""
    return panels_for(user, audience="manager")


def panels_for(user, *, audience: str) -> list[dict]:
    """The sections the case types add for this audience ("manager" or "team"). A team's section
    shows figures of its type's cases: only to people who see that type (case_type_visible). A
    manager's section lists what is addressed to them (a validation request), whatever their teams."""
    return [{"id": panel.id, "title": panel.title, "template": panel.template, "rows": panel.rows(user)}
            for ct in CASE_TYPES.values() for panel in ct.dashboard_panels if panel.audience == audience
            and (audience == "manager" or case_type_visible(user, ct.key))]


def dashboard_figures(*, user, now: datetime | None = None) -> dict:
    """The figures over the cases `user` may see (`user` None: every case, for bench/growth.py)."""
    now = now or timezone.now()
    return {"open": open_cases(now, user=user), "per_day": per_day(now, user=user),
            "time_to_decision": time_to_decision(now, user=user), "agents": agent_costs(now, user=user),
            "agreement": agreement(now, user=user), "days": DASHBOARD_DAYS}
