"""The dashboard's roll-ups (issue 29): the counters the triggers and the decision services keep
equal a recount from the rows, whatever the writer; the figures read from them are the ones a
count over the cases gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Q

from agents.models import AgentCall, AgentRun
from casework.cases.dashboard import selectors, triggers
from casework.cases.dashboard.rollup import rollup_recount, rollup_rows
from casework.cases.models import Case, Decision, DecisionDay
from casework.cases.services import (
    case_close,
    case_create,
    case_reopen,
    case_set_priority,
    case_set_status,
    case_sla_pause,
)
from casework.cases.sla import DONE_STATUSES, sla_breached_q
from casework.entities.services import case_merge

pytestmark = pytest.mark.django_db


def fraud_case(actor, risk: str) -> Case:
    case = case_create(actor=actor, case_type="fraud_alert", title=f"{risk} risk")
    run = AgentRun.objects.create(case=case, pipeline="fraud", status="completed")
    AgentCall.objects.create(run=run, key="orchestrator", name="orchestrator", status="ok",
                             output={"risk_level": risk})
    return case


def assert_counters_equal_a_recount() -> dict:
    kept = rollup_rows()
    rollup_recount()
    assert rollup_rows() == kept
    return kept


def test_the_counters_equal_a_recount_after_decide_reopen_and_redecide(alice):
    critical, low, medium, other = (fraud_case(alice, r) for r in ("critical", "low", "medium", "high"))
    case_close(actor=alice, case=critical, outcome="false_positive", reason="Looked fine")  # disagrees
    case_close(actor=alice, case=low, outcome="legit", reason="Known customer")  # agrees
    case_close(actor=alice, case=medium, outcome="legit", reason="No signal")  # no clear recommendation
    assert Decision.objects.get(case=critical, final=True).verdict == "disagree"
    row = {r.type_label: (r.decided, r.with_recommendation, r.agreed)
           for r in selectors.agreement(datetime.now(UTC))["rows"]}
    assert row == {"Fraud alert": (3, 2, 1)}
    assert_counters_equal_a_recount()

    case_reopen(actor=alice, case=critical, reason="The customer wrote back")
    assert selectors.agreement(datetime.now(UTC))["rows"][0].decided == 2
    case_close(actor=alice, case=critical, outcome="confirmed_fraud", reason="Chargeback came in")  # agrees
    case_set_priority(actor=alice, case=other, priority="critical", reason="Large amount")
    case_set_status(actor=alice, case=other, status="in_progress")
    case_sla_pause(actor=alice, case=other, reason="Waiting on the bank")
    Case.objects.filter(pk=other.pk).update(sla_breached_at=datetime.now(UTC))  # the beat task's claim
    counters = assert_counters_equal_a_recount()

    figures = selectors.dashboard_figures()
    assert [(r.decided, r.with_recommendation, r.agreed) for r in figures["agreement"]["rows"]] == [(3, 2, 2)]
    assert figures["agreement"]["disagreements"] == []
    assert figures["open"]["total"] == 1 and figures["open"]["by_priority"][0] == ("Critical", 1)
    assert sum(figures["per_day"]["opened"]) == 4 and sum(figures["per_day"]["decided"]) == 3
    assert sum(figures["per_day"]["breached"]) == 1
    # Nothing left over: the reopened decision is out of the counters, not a row of its own.
    assert sum(n for *_key, n in counters["DecisionDay"]) == Decision.objects.filter(final=True).count() == 3


def test_a_merge_counts_its_decision_and_a_deleted_case_leaves_the_counters(alice):
    survivor, merged = fraud_case(alice, "high"), fraud_case(alice, "low")
    case_merge(actor=alice, merged=merged, survivor=survivor, reason="Same customer, same card")
    assert DecisionDay.objects.get().n == 1
    assert_counters_equal_a_recount()
    decided = fraud_case(alice, "critical")
    case_close(actor=alice, case=decided, outcome="confirmed_fraud", reason="Chargeback")
    assert DecisionDay.objects.get(verdict="agree").n == 1
    Case.objects.filter(pk=decided.pk).delete()  # its decision goes with it
    counters = assert_counters_equal_a_recount()
    # The merged case's runs moved to the survivor: its decision had no recommendation to judge.
    assert [(verdict, n) for _day, _type, verdict, n in counters["DecisionDay"]] == [("", 1)]
    assert sum(n for *_key, n in counters["OpenCaseHour"]) == 1  # the survivor


def test_the_recount_backfills_decisions_written_behind_the_services_back(alice):
    case = fraud_case(alice, "critical")
    Decision.objects.create(case=case, outcome="legit", reason="imported")
    Case.objects.filter(pk=case.pk).update(status="closed", closed_at=datetime.now(UTC))
    # Counted as decided at once (the trigger), without a verdict until the recount judges it.
    [row] = selectors.agreement(datetime.now(UTC))["rows"]
    assert (row.decided, row.with_recommendation, row.agreed) == (1, 0, 0)
    rollup_recount()
    [row] = selectors.agreement(datetime.now(UTC))["rows"]
    assert (row.decided, row.with_recommendation, row.agreed) == (1, 1, 0)
    [disagreement] = selectors.agreement(datetime.now(UTC))["disagreements"]
    assert disagreement["recommended"] == "Fraud (high/critical risk)"


def test_open_cases_by_age_and_breach_match_a_count_over_the_cases_at_the_hour_boundaries():
    """The counters hold hours; the cases in the hours an age boundary or now cuts are placed
    one by one, so the figures equal the exact count."""
    now = datetime(2026, 11, 20, 10, 30, tzinfo=UTC)
    offsets = [timedelta(minutes=m) for m in (-50, -10, 0, 10, 50)]
    n = 0
    for hours in (0, 24, 72, 168, 672, 1000):
        for offset in [o for o in offsets if hours or o <= timedelta(0)]:  # none created after now
            for due in (-120, -20, 0, 20, 120, None):
                n += 1
                case = Case.objects.create(reference=f"E-{n}", case_type="fraud_alert", title="edge")
                Case.objects.filter(pk=case.pk).update(
                    created_at=now - timedelta(hours=hours) + offset,
                    due_at=None if due is None else now + timedelta(minutes=due),
                    status=("new", "in_progress", "closed")[n % 3],
                    sla_paused_at=now if n % 7 == 0 else None)
    figures = selectors.open_cases(now)
    open_cases = Case.objects.exclude(status__in=DONE_STATUSES)
    expected = []
    for i, (_label, hours) in enumerate(selectors.AGE_BUCKETS):
        q = Q(created_at__lte=now - timedelta(hours=hours))
        if i + 1 < len(selectors.AGE_BUCKETS):
            q &= Q(created_at__gt=now - timedelta(hours=selectors.AGE_BUCKETS[i + 1][1]))
        expected.append(open_cases.filter(q).count())
    assert [count for _label, count in figures["ages"]] == expected
    assert figures["total"] == open_cases.count() == sum(expected)
    assert figures["breached"] == Case.objects.filter(sla_breached_q(now)).count() > 0
    assert_counters_equal_a_recount()


def test_sqlite_triggers_come_back_after_migrate_if_a_table_remake_dropped_them(alice):
    """SQLite alters a table by copying it, which drops its triggers; post_migrate puts them
    back (PostgreSQL keeps them: there, nothing to drop or put back)."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            for statement in triggers.SQLITE_DROP:  # what Django's table remake does to them
                cursor.execute(statement)
    triggers.sqlite_reinstall(sender=None, using="default")
    case = fraud_case(alice, "low")
    case_close(actor=alice, case=case, outcome="legit", reason="Known customer")
    counters = assert_counters_equal_a_recount()
    assert [(kind, n) for _day, _type, kind, n in counters["CaseDay"]] == [("decided", 1), ("opened", 1)]
    assert [(verdict, n) for _day, _type, verdict, n in counters["DecisionDay"]] == [("agree", 1)]
