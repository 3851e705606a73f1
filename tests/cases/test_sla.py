"""Deadlines (issue 14): due_at from CASE_SLA by type and priority, recomputed with the
priority; the countdown; the sla filter on the page and the API; the beat task's warning and
breach record, once each; decided cases have no breach."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEntry
from casework.cases.models import Case
from casework.cases.notifications.deadlines import cases_sla_scan
from casework.cases.notifications.models import Notification
from casework.cases.services import case_close, case_create, case_set_priority
from casework.cases.sla import case_countdown

pytestmark = pytest.mark.django_db


def hours_until(case: Case) -> float:
    return round((case.due_at - case.created_at).total_seconds() / 3600, 1)


def test_due_at_comes_from_case_sla_by_type_and_priority(alice):
    assert hours_until(case_create(actor=alice, case_type="fraud_alert", title="a", priority="critical")) == 2
    assert hours_until(case_create(actor=alice, case_type="release_risk", title="b", priority="critical")) == 4
    assert hours_until(case_create(actor=alice, case_type="release_risk", title="c")) == 72


def test_a_priority_change_recomputes_due_at_from_the_creation(alice):
    case = case_create(actor=alice, case_type="support_ticket", title="slow", priority="low")
    assert hours_until(case) == 168
    case = case_set_priority(actor=alice, case=case, priority="critical", reason="customer waiting")
    assert hours_until(case) == 1
    entry = AuditEntry.objects.filter(action="case.priority_changed").latest("id")
    assert entry.data["due_at"] == case.due_at.isoformat()


def _backdate(case: Case, *, due_in_hours: float, status: str = "in_progress") -> Case:
    Case.objects.filter(pk=case.pk).update(due_at=timezone.now() + timedelta(hours=due_in_hours), status=status)
    case.refresh_from_db()
    return case


def test_the_countdown_reads_due_in_and_overdue_by(alice):
    case = case_create(actor=alice, case_type="release_risk", title="r")
    assert case_countdown(_backdate(case, due_in_hours=3.5)).text == "due in 3 h"
    assert case_countdown(_backdate(case, due_in_hours=1.5)).state == "due_soon"
    late = case_countdown(_backdate(case, due_in_hours=-2.2))
    assert (late.state, late.text) == ("breached", "overdue by 2 h")
    assert case_countdown(_backdate(case, due_in_hours=-2, status="resolved")).state == "done"


@pytest.fixture
def three(alice):
    late = _backdate(case_create(actor=alice, case_type="transaction_investigation", title="Late one"), due_in_hours=-5)
    soon = _backdate(case_create(actor=alice, case_type="transaction_investigation", title="Soon one"), due_in_hours=1.5)
    later = _backdate(case_create(actor=alice, case_type="transaction_investigation", title="Later one"), due_in_hours=50)
    return late, soon, later


def test_the_queue_filters_and_highlights_breached_cases(alice_client, three):
    late, soon, later = three
    def rows(html: str) -> list[bool]:
        return [f'id="case-row-{case.pk}"' in html for case in (late, soon, later)]

    html = alice_client.get("/cases/?sla=breached").content.decode()
    assert rows(html) == [True, False, False]
    assert "overdue by 5 h" in html and 'class="due due-breached"' in html
    html = alice_client.get("/cases/?sla=due_soon").content.decode()
    assert rows(html) == [False, True, False] and "due in 1 h" in html
    page = alice_client.get("/cases/?sla=bogus")
    assert "sla:" in page.content.decode()  # the page names the bad parameter
    # The case page's header (the partial its poll refreshes) shows it too.
    from django.template.loader import render_to_string

    assert "overdue by 5 h" in render_to_string("cases/_case_meta.html", {"case": late})


def test_the_api_filters_by_sla_and_refuses_an_unknown_value(api, three):
    late, soon, _ = three
    rows = api.get("/api/cases/?sla=breached").json()["results"]
    assert [r["reference"] for r in rows] == [late.reference]
    assert rows[0]["due_at"].startswith(late.due_at.strftime("%Y-%m-%dT%H:%M"))
    assert [r["reference"] for r in api.get("/api/cases/?sla=due_soon").json()["results"]] == [soon.reference]
    bad = api.get("/api/cases/?sla=bogus")
    assert bad.status_code == 400 and "sla" in bad.content.decode()


def test_the_beat_task_warns_once_and_records_a_breach_once(alice, ivan, three):
    late, soon, later = three
    case_close(actor=alice, case=later, outcome="not_fraud", reason="the cardholder confirmed it")
    Case.objects.filter(pk=later.pk).update(due_at=timezone.now() - timedelta(hours=1))  # decided: no breach
    Case.objects.filter(pk=soon.pk).update(assignee=ivan)
    assert cases_sla_scan() == {"warned": 1, "breached": 1}
    assert cases_sla_scan() == {"warned": 0, "breached": 0}  # a second scan (or delivery) does nothing
    [warning] = Notification.objects.filter(kind="sla_warning")
    assert warning.recipient_user == ivan and warning.case_id == soon.pk and "due in" in warning.subject
    [breach] = AuditEntry.objects.filter(action="case.sla_breached")
    assert breach.case_id == late.pk and breach.data["priority"] == "medium"
    # The task is scheduled by beat.
    from django.conf import settings

    assert settings.CELERY_BEAT_SCHEDULE["cases-sla-check"]["task"] == (
        "casework.cases.notifications.tasks.cases_sla_check")
