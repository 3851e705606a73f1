"""The dashboard's roll-ups: counters kept as cases and decisions are written, so that the
dashboard reads a few hundred counter rows whatever the size of the history (issue 29).

- CaseDay (opened / decided / breached per day and type) and OpenCaseHour (the open cases by
  type, status, priority, hour created and hour due) are kept by triggers on cases_case
  (dashboard/triggers.py): every writer counts, bulk or not.
- DecisionDay (final decisions per day, type and verdict) is kept by triggers on
  cases_decision too (a reopen's decision stops being final: out of the count). The verdict
  (did the person agree with the agents' recommendation?) is computed once, when the decision
  is taken, from the type's Recommendation hook, and stored on the decision by the services
  that record one (`decision_recorded`: case_close, a merge), in their transaction. A decision
  written behind them counts as decided without a verdict until `rollup_recount`.

`rollup_recount` recomputes all three from the rows (the data migration's backfill, the
management command `dashboard_rollup_rebuild`, and the tests' proof that the counters equal a
recount); `rollup_rows` reads them as comparable dicts.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import connection, transaction
from django.db.models import Case as CaseWhen
from django.db.models import Count, F, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Coalesce, TruncDate, TruncHour

from casework.cases.models import NEVER_DUE, Case, CaseDay, Decision, DecisionDay, OpenCaseHour
from casework.cases.sla import DONE_STATUSES
from casework.cases.types import CASE_TYPES

NEVER = datetime.fromisoformat(NEVER_DUE).replace(tzinfo=UTC)


def decision_verdict(decision: Decision) -> tuple[str, str]:
    """(recommended, verdict) for a decision: the type's latest recommendation record's `rec`
    ("" when none is clear), "agree" or "disagree" ("" without a recommendation)."""
    hook = CASE_TYPES[decision.case.case_type].recommendation
    if hook is None:
        return "", ""
    rec = next(iter(hook.records(decision.case_id).values_list("rec", flat=True)[:1]), None)
    if not rec:
        return "", ""
    return str(rec), "agree" if decision.outcome in hook.agrees.get(rec, ()) else "disagree"


@transaction.atomic
def decision_recorded(*, decision: Decision) -> Decision:
    """Judge a new final decision against the agents' recommendation and store the verdict
    (the trigger on cases_decision moves its count to that verdict)."""
    decision.recommended, decision.verdict = decision_verdict(decision)
    if decision.verdict or decision.recommended:
        Decision.objects.filter(pk=decision.pk).update(recommended=decision.recommended, verdict=decision.verdict)
    return decision


def _verdicts_recompute() -> None:
    """Every final decision's recommended and verdict, set-based: one UPDATE per type."""
    for ct in CASE_TYPES.values():
        decisions = Decision.objects.filter(final=True, case__case_type=ct.key)
        if ct.recommendation is None:
            decisions.update(recommended="", verdict="")
            continue
        rec = Subquery(ct.recommendation.records(OuterRef("case_id")).values("rec")[:1])
        decisions.update(recommended=Coalesce(rec, Value("")))
        agree = Q(pk__in=[])
        for key, outcomes in ct.recommendation.agrees.items():
            agree |= Q(recommended=key, outcome__in=outcomes)
        decisions.update(verdict=CaseWhen(When(agree, then=Value("agree")),
                                          When(~Q(recommended=""), then=Value("disagree")), default=Value("")))


def _open_hours():
    due = CaseWhen(When(Q(due_at__isnull=True) | Q(sla_paused_at__isnull=False), then=Value(NEVER)),
                   default=TruncHour("due_at", tzinfo=UTC))
    return (Case.objects.exclude(status__in=DONE_STATUSES).order_by()
            .annotate(created_hour=TruncHour("created_at", tzinfo=UTC), due_hour=due)
            .values("case_type", "status", "priority", "created_hour", "due_hour").annotate(n=Count("pk")))


def _case_days():
    for kind, column in (("opened", "created_at"), ("decided", "closed_at"), ("breached", "sla_breached_at")):
        for row in (Case.objects.filter(**{f"{column}__isnull": False}).order_by()
                    .annotate(day=TruncDate(column, tzinfo=UTC)).values("day", "case_type").annotate(n=Count("pk"))):
            yield {**row, "kind": kind}


def _decision_days():
    return (Decision.objects.filter(final=True).order_by().annotate(day=TruncDate("decided_at", tzinfo=UTC))
            .values("day", "verdict", case_type=F("case__case_type")).annotate(n=Count("pk")))


@transaction.atomic
def rollup_recount(*, verdicts: bool = True) -> dict:
    """Recount every roll-up from the cases and decisions (a backfill; the triggers and the
    services keep them from then on). Locks the counter tables against the writers for the
    duration. Returns the number of counter rows written per table."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for model in (CaseDay, OpenCaseHour, DecisionDay):
                cursor.execute(f"LOCK TABLE {model._meta.db_table} IN EXCLUSIVE MODE")
    if verdicts:
        _verdicts_recompute()
    written = {}
    for model, rows in ((CaseDay, _case_days()), (OpenCaseHour, _open_hours()), (DecisionDay, _decision_days())):
        model.objects.all().delete()
        written[model.__name__] = len(model.objects.bulk_create([model(**row) for row in rows], batch_size=2000))
    return written


def rollup_rows() -> dict:
    """The counters as they stand, without zero rows, comparable with a recount's."""
    return {
        "CaseDay": sorted((r.day, r.case_type, r.kind, r.n) for r in CaseDay.objects.exclude(n=0)),
        "OpenCaseHour": sorted((r.case_type, r.status, r.priority, r.created_hour, r.due_hour, r.n)
                               for r in OpenCaseHour.objects.exclude(n=0)),
        "DecisionDay": sorted((r.day, r.case_type, r.verdict, r.n) for r in DecisionDay.objects.exclude(n=0)),
    }
