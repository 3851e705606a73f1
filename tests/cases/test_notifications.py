"""Notifications for every case type (issue 14): a case assigned to you, a failed run on your
case, read when you act on them (open the case), the unread count in one query, the inbox,
and the per-user email preference."""

from __future__ import annotations

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import AgentRun
from agents.runtime.pipeline import Pipeline, RunContext, execute_run, register_pipeline
from audit.models import AuditEntry
from casework.cases.notifications import tasks
from casework.cases.notifications.models import Notification, NotificationPreference
from casework.cases.services import case_assign, case_create

pytestmark = pytest.mark.django_db


def _explode(ctx: RunContext) -> None:
    raise RuntimeError("the write-back broke")


register_pipeline(Pipeline(name="test_notify_fail", modes={"full": []}, finish=_explode,
                           description="A run that fails at its end."))


@pytest.fixture
def queued_emails(monkeypatch):
    sent: list[int] = []
    monkeypatch.setattr(tasks.notification_email_send, "delay", lambda pk: sent.append(pk))
    return sent


def test_assigning_a_case_notifies_the_assignee_after_commit(alice, ivan, django_capture_on_commit_callbacks):
    case = case_create(actor=alice, case_type="release_risk", title="Release 2.0")
    with django_capture_on_commit_callbacks(execute=True):
        case_assign(actor=alice, case=case, assignee=ivan)
    [note] = Notification.objects.all()
    assert (note.kind, note.recipient_user, note.case_id) == ("assigned", ivan, case.pk)
    assert note.url == f"/cases/{case.reference}/" and "alice assigned" in note.body
    assert AuditEntry.objects.filter(action="notification.sent", object_id=str(note.pk)).exists()
    with django_capture_on_commit_callbacks(execute=True):
        case_assign(actor=ivan, case=case, assignee=ivan)  # unchanged: nothing new
        mine = case_create(actor=ivan, case_type="release_risk", title="Mine", assignee=ivan)  # to oneself: nothing
    assert Notification.objects.count() == 1 and mine.assignee == ivan


def test_opening_the_case_marks_its_notifications_read_and_the_badge_drops(
        client, alice, ivan, django_capture_on_commit_callbacks):
    case = case_create(actor=alice, case_type="transaction_investigation", title="Odd purchase")
    other = case_create(actor=alice, case_type="transaction_investigation", title="Another")
    with django_capture_on_commit_callbacks(execute=True):
        case_assign(actor=alice, case=case, assignee=ivan)
        case_assign(actor=alice, case=other, assignee=ivan)
    client.force_login(ivan)
    inbox = client.get("/notifications/").content.decode()
    assert 'id="nav-unread">2<' in inbox and f"{case.reference} assigned to you" in inbox
    client.get(f"/cases/{case.reference}/")  # acting on it, not clicking the notification
    assert Notification.objects.get(case=case).read_at is not None
    assert Notification.objects.get(case=other).read_at is None
    assert 'id="nav-unread">1<' in client.get("/notifications/?show=unread").content.decode()
    assert client.get("/notifications/?show=bogus").status_code == 400


def test_the_unread_count_costs_one_query(alice_client, alice):
    for i in range(3):
        Notification.objects.create(recipient_user=alice, kind="assigned", subject=f"n{i}", body="b")
    with CaptureQueriesContext(connection) as queries:
        html = alice_client.get("/cases/").content.decode()
    assert 'id="nav-unread">3<' in html
    assert sum("notifications_notification" in q["sql"] for q in queries.captured_queries) == 1


def test_a_failed_run_notifies_the_owner_of_the_case(alice, ivan, django_capture_on_commit_callbacks):
    case = case_create(actor=alice, case_type="fraud_alert", title="Card testing")
    case_assign(actor=alice, case=case, assignee=ivan)
    run = AgentRun.objects.create(case=case, pipeline="test_notify_fail", mode="full")
    with django_capture_on_commit_callbacks(execute=True):
        execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == "failed"
    [note] = Notification.objects.filter(kind="run_failed")
    assert note.recipient_user == ivan and f"#{run.pk}" in note.subject and "write-back broke" in note.body


def test_a_failed_run_on_an_unowned_case_notifies_nobody(alice, django_capture_on_commit_callbacks):
    case = case_create(actor=alice, case_type="fraud_alert", title="Nobody's")
    run = AgentRun.objects.create(case=case, pipeline="test_notify_fail", mode="full")
    with django_capture_on_commit_callbacks(execute=True):
        execute_run(run.pk)
    assert not Notification.objects.filter(kind="run_failed").exists()


def test_email_follows_the_persons_preference(alice, ivan, queued_emails, django_capture_on_commit_callbacks):
    ivan.email = "ivan@example.com"
    ivan.save()
    first = case_create(actor=alice, case_type="release_risk", title="One")
    with django_capture_on_commit_callbacks(execute=True):
        case_assign(actor=alice, case=first, assignee=ivan)
    [note] = Notification.objects.all()
    assert queued_emails == [note.pk]
    tasks.notification_email_send.apply(args=[note.pk])
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ivan@example.com"]
    assert f"/cases/{first.reference}/" in mail.outbox[0].body
    NotificationPreference.objects.create(user=ivan, email_assigned=False)
    second = case_create(actor=alice, case_type="release_risk", title="Two")
    with django_capture_on_commit_callbacks(execute=True):
        case_assign(actor=alice, case=second, assignee=ivan)
    assert len(queued_emails) == 1  # in the app only
    assert Notification.objects.get(case=second).delivery == "in_app"


def test_the_settings_page_saves_the_preference_and_audits_it(client, ivan):
    client.force_login(ivan)
    assert 'href="/notifications/settings/"' in client.get("/cases/").content.decode()  # the name in the nav
    page = client.get("/notifications/settings/").content.decode()
    assert 'name="email_assigned"' in page and "no email address" in page
    assert 'href="/notifications/"' in page
    response = client.post("/notifications/settings/", {"email_run_failed": "on", "email_sla": "on"})
    assert response.status_code == 302
    preference = NotificationPreference.objects.get(user=ivan)
    assert (preference.email_assigned, preference.email_run_failed, preference.email_requests) == (False, True, False)
    assert preference.wants_email("sla_warning") and not preference.wants_email("answer")
    assert AuditEntry.objects.filter(action="notification.preferences_changed").exists()
