"""Reminders and escalation, with a controlled clock: an unanswered request gets one reminder
after ACCESS_REMINDER_DAYS and is escalated to the investigator after ACCESS_ESCALATION_DAYS,
once each however often the periodic task runs."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest

from casework.access.links import link_url
from casework.access.models import InfoRequest
from casework.access.reminders import requests_remind_due
from casework.cases.notifications.models import Notification

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _days(settings):
    settings.ACCESS_REMINDER_DAYS = 2
    settings.ACCESS_ESCALATION_DAYS = 4


def run_at(when, capture):
    with capture(execute=True):
        return requests_remind_due(now=when)


def test_the_employee_is_reminded_once_then_the_investigator_is_told(asked, alice, ivan, inbox,
                                                                    django_capture_on_commit_callbacks):
    sent = asked.sent_at
    inbox.clear()
    assert run_at(sent + timedelta(days=1, hours=23), django_capture_on_commit_callbacks) == \
        {"reminders": 0, "escalations": 0, "expired": 0}

    assert run_at(sent + timedelta(days=2, minutes=1), django_capture_on_commit_callbacks) == \
        {"reminders": 1, "escalations": 0, "expired": 0}
    assert [m.to for m in inbox] == [["priya@example.com"]]
    assert inbox[0].subject.startswith("Reminder: ")
    assert link_url(asked) in inbox[0].body  # the same link: it still works
    asked.refresh_from_db()
    assert asked.reminder_count == 1
    assert run_at(sent + timedelta(days=3), django_capture_on_commit_callbacks) == {"reminders": 0, "escalations": 0, "expired": 0}

    assert run_at(sent + timedelta(days=4, minutes=1), django_capture_on_commit_callbacks) == \
        {"reminders": 0, "escalations": 1, "expired": 0}
    escalations = Notification.objects.filter(kind="escalation")
    assert sorted(n.recipient_user.username for n in escalations) == ["alice", "ivan"]  # unassigned: all investigators
    assert "no answer from the employee after 4 days" in escalations[0].subject
    assert run_at(sent + timedelta(days=6), django_capture_on_commit_callbacks) == {"reminders": 0, "escalations": 0, "expired": 0}


def test_an_assigned_case_escalates_to_its_investigator_only(asked, alice, ivan, django_capture_on_commit_callbacks):
    from casework.cases.services import case_assign

    case_assign(actor=alice, case=asked.mutation.case, assignee=ivan)
    run_at(asked.sent_at + timedelta(days=5), django_capture_on_commit_callbacks)
    assert [n.recipient_user.username for n in Notification.objects.filter(kind="escalation")] == ["ivan"]


def test_the_manager_is_reminded_in_the_app_and_by_email(org, awaiting_manager, inbox,
                                                         django_capture_on_commit_callbacks):
    run_at(awaiting_manager.sent_at + timedelta(days=2, hours=1), django_capture_on_commit_callbacks)
    reminder = Notification.objects.get(kind="request_reminder", recipient_user=org.mona_user)
    assert reminder.url == f"/access/inbox/{awaiting_manager.pk}/"
    assert inbox[-1].to == ["mona@example.com"]


def test_answered_and_withdrawn_requests_are_left_alone(asked, org, alice, django_capture_on_commit_callbacks):
    from casework.access.links import link_token
    from casework.access.services import claim_submit

    claim_submit(token=link_token(asked), claim_type="other", explanation="It was an emergency.")
    assert run_at(asked.sent_at + timedelta(days=5), django_capture_on_commit_callbacks) == \
        {"reminders": 0, "escalations": 0, "expired": 0}


def test_an_expired_link_moves_the_change_to_link_expired_and_tells_the_investigators_once(
        asked, alice, ivan, settings, django_capture_on_commit_callbacks):
    """Issue 22: an expired link read "Awaiting User Response" until someone looked; the
    periodic task now moves it to Link Expired with the reason, at the first run after the
    expiry (the clock is the task's `now`), and that is the request's one escalation."""
    from audit.models import AuditEntry

    mutation = asked.mutation
    InfoRequest.objects.filter(pk=asked.pk).update(expires_at=asked.sent_at + timedelta(days=1))
    assert run_at(asked.sent_at + timedelta(hours=23), django_capture_on_commit_callbacks) == \
        {"reminders": 0, "escalations": 0, "expired": 0}
    mutation.refresh_from_db()
    assert mutation.status == "awaiting_user_response"

    assert run_at(asked.sent_at + timedelta(days=1, minutes=1), django_capture_on_commit_callbacks) == \
        {"reminders": 0, "escalations": 0, "expired": 1}
    mutation.refresh_from_db()
    mutation.case.refresh_from_db()
    assert (mutation.status, mutation.status_label) == ("link_expired", "Link Expired - No User Response")
    assert mutation.case.status == "in_progress"  # the team has to act; nobody can answer
    move = AuditEntry.objects.filter(case_id=mutation.case_id, action="access.status_changed").last().data
    assert (move["from"], move["to"], move["by"]) == ("awaiting_user_response", "link_expired", "system")
    assert "expired on" in move["reason"] and "without an answer" in move["reason"]
    told = Notification.objects.filter(kind="escalation")
    assert sorted(n.recipient_user.username for n in told) == ["alice", "ivan"]
    assert "link expired unanswered" in told[0].subject
    # Later runs neither remind nor escalate it again.
    for days in (3, 4.5, 9):
        assert run_at(asked.sent_at + timedelta(days=days), django_capture_on_commit_callbacks) == \
            {"reminders": 0, "escalations": 0, "expired": 0}
    assert told.count() == 2


def test_a_fresh_link_after_expiry_waits_for_the_employee_again(asked, alice, django_capture_on_commit_callbacks):
    from casework.access.services import request_resend

    InfoRequest.objects.filter(pk=asked.pk).update(expires_at=asked.sent_at + timedelta(days=1))
    run_at(asked.sent_at + timedelta(days=2), django_capture_on_commit_callbacks)
    asked.refresh_from_db()
    fresh = request_resend(actor=alice, request=asked, now=asked.sent_at + timedelta(days=2, hours=1))
    mutation = fresh.mutation
    mutation.refresh_from_db()
    mutation.case.refresh_from_db()
    # Issue 43: queued until the fresh link's email is accepted, then awaiting the employee again.
    assert mutation.status == "user_request_queued" and mutation.case.status == "awaiting_response"
    from casework.cases.notifications.email import notification_email
    from casework.cases.notifications.models import Notification

    notification_email(Notification.objects.filter(target_id=fresh.pk, kind="request").latest("id").pk)
    mutation.refresh_from_db()
    assert mutation.status == "awaiting_user_response"
    assert fresh.state(asked.sent_at + timedelta(days=2, hours=2)) == "open"


def test_the_periodic_task_uses_the_clock(asked, alice, django_capture_on_commit_callbacks):
    from casework.access.tasks import access_send_reminders

    later = asked.sent_at + timedelta(days=2, hours=1)
    with mock.patch("django.utils.timezone.now", return_value=later), \
            django_capture_on_commit_callbacks(execute=True):
        result = access_send_reminders.delay()
    assert result.get() == {"reminders": 1, "escalations": 0, "expired": 0}


def test_the_beat_schedule_runs_the_task(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["access-reminders"]
    assert entry["task"] == "casework.access.tasks.access_send_reminders"
    assert entry["schedule"] == settings.ACCESS_REMINDER_CHECK_MINUTES * 60
    assert str(settings.VAR_DIR) in settings.CELERY_BEAT_SCHEDULE_FILENAME
