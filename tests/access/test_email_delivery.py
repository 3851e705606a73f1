"""The employee's email (issue 13): sent by a Celery task with retries spaced out, EMAIL_TIMEOUT
set; a delivery that gives up shows on the case page with a "Resend link" button, and the new
link replaces the old one."""

from __future__ import annotations

import smtplib

import pytest
from django.conf import settings

from audit.models import AuditEntry
from casework.access.links import link_check, link_token
from casework.access.models import InfoRequest
from casework.cases.notifications import tasks
from casework.cases.notifications.models import Notification

pytestmark = pytest.mark.django_db

ATTEMPTS: list[str] = []


class FailingBackend:
    """An SMTP server that is down."""

    def __init__(self, *args, **kwargs):
        pass

    def send_messages(self, messages):
        ATTEMPTS.append(messages[0].to[0])
        raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")


@pytest.fixture
def smtp_down(settings):
    ATTEMPTS.clear()
    settings.EMAIL_BACKEND = "tests.access.test_email_delivery.FailingBackend"


def test_email_timeout_is_set():
    assert settings.EMAIL_TIMEOUT == 10


def test_the_email_goes_out_from_a_celery_task_after_commit(submit, django_capture_on_commit_callbacks, monkeypatch,
                                                            inbox):
    queued = []
    monkeypatch.setattr(tasks.notification_email_send, "delay", lambda pk: queued.append(pk))
    from casework.access.services import request_send

    mutation = submit(investigate=False)
    from casework.access.states import AccessStatus, mutation_transition

    for status in (AccessStatus.INVESTIGATION_STARTED, AccessStatus.CLARIFICATION_REQUESTED):
        mutation_transition(actor="system", mutation=mutation, to=status, reason="test")
    with django_capture_on_commit_callbacks(execute=True):
        request, _ = request_send(actor="system", mutation=mutation, kind=InfoRequest.Kind.EMPLOYEE,
                                  subject="Please explain", body="Why?")
    note = Notification.objects.get(info_request=request)
    assert queued == [note.pk] and note.delivery == "sending"
    assert len(inbox) == 0  # nothing was sent in the request's own thread
    tasks.notification_email_send.apply(args=[note.pk])
    note.refresh_from_db()
    assert note.delivery == "emailed" and [m.to for m in inbox] == [["priya@example.com"]]
    assert inbox[0].subject == "Please explain" and "Why?" in inbox[0].body


def test_a_failed_delivery_is_retried_spaced_out_then_shown_with_a_resend_button(
        asked_unsent, smtp_down, alice_client, monkeypatch, settings):
    asked = asked_unsent
    countdowns = []
    original = tasks.notification_email_send.retry

    def retry(*args, **kwargs):
        countdowns.append(kwargs.get("countdown"))
        return original(*args, **kwargs)

    monkeypatch.setattr(tasks.notification_email_send, "retry", retry)
    settings.CELERY_TASK_EAGER_PROPAGATES = False  # eagerly, a Retry is not an error here
    note = Notification.objects.get(info_request=asked)
    # Eagerly, each retry runs at once (a worker waits out the countdown).
    tasks.notification_email_send.apply(args=[note.pk], throw=False)
    note.refresh_from_db()
    assert countdowns == [30, 120, 600]
    assert ATTEMPTS == ["priya@example.com"] * 4
    assert note.delivery == "failed" and note.email_attempts == 4
    assert "SMTPServerDisconnected" in note.email_error
    assert AuditEntry.objects.filter(action="notification.email_failed", object_id=str(note.pk)).exists()
    # Issue 43: nobody was told, so the change does not await the employee.
    asked.mutation.refresh_from_db()
    assert asked.mutation.status == "user_request_failed"

    reference = asked.mutation.case.reference
    html = alice_client.get(f"/cases/{reference}/").content.decode()
    assert f'id="email-failed-{asked.pk}"' in html and "after 4 attempts" in html
    assert f'action="/access/cases/{reference}/requests/{asked.pk}/resend/"' in html and "Resend link" in html

    old_token = link_token(asked)
    response = alice_client.post(f"/access/cases/{reference}/requests/{asked.pk}/resend/")
    assert response.status_code == 302
    assert not link_check(old_token).ok  # the old link no longer works
    fresh = InfoRequest.objects.exclude(pk=asked.pk).get(mutation=asked.mutation)
    assert link_check(link_token(fresh)).ok
