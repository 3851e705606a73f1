""""Awaiting User Response" (the employee was notified) rests on a fact (issue 43): the email
with their signed link accepted by the mail server. Until then the change says the request is
queued; if the email fails it says so, and the investigators are told."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.models import AuditEntry
from casework.access.models import HRMutation
from casework.cases.notifications.models import Notification

pytestmark = pytest.mark.django_db(transaction=True)


def moves(mutation) -> list[dict]:
    return [e.data for e in AuditEntry.objects.filter(case_id=mutation.case_id, action="access.status_changed")
            .order_by("id")]


def test_the_employee_is_awaited_only_once_the_email_with_their_link_was_accepted(submit, inbox):
    mutation = submit()
    assert mutation.status == "awaiting_user_response"
    [delivered] = [m for m in moves(mutation) if m["to"] == "awaiting_user_response"]
    # The system moved it, on the mail server's acceptance, naming the notification it rests on.
    assert delivered["by"] == "system" and delivered["fact"].startswith("access.InfoRequest#")
    assert "mail server accepted" in delivered["reason"]
    assert not [m for m in moves(mutation) if "was notified" in m["reason"] and m["by"] == "agent"]
    assert [m.to for m in inbox] == [["priya@example.com"]]


def test_a_link_email_that_fails_is_not_awaiting_the_employee_and_the_investigators_are_told(submit, inbox, alice,
                                                                                             settings):
    settings.CELERY_TASK_EAGER_PROPAGATES = False  # eagerly, the task's retries run at once, then it gives up
    inbox.server.refuse = "550 5.1.1 <priya@example.com>: no such user"
    mutation = submit()
    mutation = HRMutation.objects.select_related("case").get(pk=mutation.pk)
    assert mutation.status != "awaiting_user_response"
    assert mutation.status == "user_request_failed" and mutation.case.status == "in_progress"
    assert "was notified" not in moves(mutation)[-1]["reason"]
    assert Notification.objects.filter(recipient_user=alice, case=mutation.case,
                                       subject__contains="not delivered").exists()
    # The change's tab says what happened, not "waiting for Priya".
    alice_client = Client()
    alice_client.force_login(alice)
    tab = alice_client.get(f"/access/cases/{mutation.case.reference}/tabs/change/", HTTP_HX_REQUEST="true")
    assert "failed after its retries, so nobody was told" in tab.content.decode()
    assert "to explain the change through their link" not in tab.content.decode()
