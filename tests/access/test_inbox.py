"""The manager's inbox: a manager sees and answers only the requests addressed to them;
everyone else gets 403 (or the login page), through the pages and the API alike."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from casework.access.models import InfoRequest, ManagerVerdict

pytestmark = pytest.mark.django_db


def test_the_manager_sees_the_change_the_evidence_and_the_validated_claim(client, org, awaiting_manager):
    client.force_login(org.mona_user)
    response = client.get("/")  # the manager's dashboard: their requests, with age
    home = response.content.decode()
    # and their teams' figures (tests/cases/test_need_to_know_dashboard.py): in no team, zeros.
    assert 'id="manager-requests"' in home and response.context["figures"]["open"]["total"] == 0
    assert f'href="/access/inbox/{awaiting_manager.pk}/"' in home
    inbox = client.get("/access/inbox/").content.decode()
    assert awaiting_manager.mutation.case.reference in inbox and "Priya Patel" in inbox
    assert "Confirmed by the records" in inbox
    assert 'class="nav-count"' in inbox  # the nav shows one request waiting
    detail = client.get(f"/access/inbox/{awaiting_manager.pk}/").content.decode()
    for text in ("Jan de Vries", "FinanceApp", "Admin access", "Write is below the required Admin",
                 "Kees Bakker", "Kees was ill and asked me to.", "Confirmed: Kees was on approved sick leave.",
                 "Approve the change", "Deny the change"):
        assert text in detail, text


def test_another_manager_gets_403_and_changes_nothing(client, org, awaiting_manager):
    client.force_login(org.mark_user)
    assert awaiting_manager.mutation.case.reference not in client.get("/access/inbox/").content.decode()
    assert client.get(f"/access/inbox/{awaiting_manager.pk}/").status_code == 403
    response = client.post(f"/access/inbox/{awaiting_manager.pk}/", {"decision": "approve", "comment": "Fine."})
    assert response.status_code == 403
    api = APIClient()
    api.force_authenticate(org.mark_user)
    assert api.get("/api/access/inbox/").json() == []
    answer = api.post(f"/api/access/requests/{awaiting_manager.pk}/answer/", {"approved": True, "comment": "x"},
                      format="json")
    assert answer.status_code == 403
    awaiting_manager.refresh_from_db()
    assert awaiting_manager.answered_at is None and not ManagerVerdict.objects.exists()


def test_investigators_and_anonymous_people_have_no_inbox(client, alice, awaiting_manager):
    anonymous = client.get(f"/access/inbox/{awaiting_manager.pk}/")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")
    assert APIClient().post(f"/api/access/requests/{awaiting_manager.pk}/answer/",
                            {"approved": True, "comment": "x"}, format="json").status_code in (401, 403)
    client.force_login(alice)
    assert client.get("/access/inbox/").status_code == 403
    assert client.get(f"/access/inbox/{awaiting_manager.pk}/").status_code == 403


def test_the_employees_request_is_not_a_manager_request(client, org, awaiting_manager):
    employee_request = InfoRequest.objects.get(mutation=awaiting_manager.mutation, kind="employee_clarification")
    client.force_login(org.mona_user)
    assert client.get(f"/access/inbox/{employee_request.pk}/").status_code == 404


def test_the_manager_approves_once(client, org, awaiting_manager, django_capture_on_commit_callbacks):
    client.force_login(org.mona_user)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(f"/access/inbox/{awaiting_manager.pk}/",
                               {"decision": "approve", "comment": "I asked her to cover."})
    assert response.status_code == 302 and response["Location"] == "/access/inbox/"
    assert len(callbacks) == 1  # the advisory step is enqueued on commit
    mutation = awaiting_manager.mutation
    mutation.refresh_from_db()
    assert mutation.status == "approved"
    verdict = ManagerVerdict.objects.get()
    assert verdict.approved and verdict.decided_by == org.mona_user
    again = client.post(f"/access/inbox/{awaiting_manager.pk}/", {"decision": "deny", "comment": "No."},
                        follow=True)
    assert "You already answered" in again.content.decode()
    assert ManagerVerdict.objects.count() == 1
    answered = client.get("/access/inbox/").content.decode()
    assert "Nothing is waiting for you." in answered and "Approved" in answered


def test_a_comment_is_required(client, org, awaiting_manager):
    client.force_login(org.mona_user)
    response = client.post(f"/access/inbox/{awaiting_manager.pk}/", {"decision": "deny", "comment": ""})
    assert response.status_code == 400
    assert not ManagerVerdict.objects.exists()


def test_a_request_withdrawn_before_the_answer_is_refused(client, org, awaiting_manager, alice):
    from casework.access.services import mutation_decide

    mutation_decide(actor=alice, mutation=awaiting_manager.mutation, outcome="manual", reason="Handled by phone.")
    client.force_login(org.mona_user)
    page = client.get(f"/access/inbox/{awaiting_manager.pk}/").content.decode()
    assert "This request was withdrawn" in page
    api = APIClient()
    api.force_authenticate(org.mona_user)
    response = api.post(f"/api/access/requests/{awaiting_manager.pk}/answer/", {"approved": True, "comment": "ok"},
                        format="json")
    assert response.status_code == 409 and response.json()["code"] == "request_cancelled"


def test_answering_marks_the_managers_notification_read_and_tells_the_investigator(
        client, org, awaiting_manager, alice):
    """Issue 14: a notification is read when its person acts on it (answers the request), and an
    answer from a manager (or an employee) is a notification to the investigator."""
    from casework.cases.notifications.models import Notification

    asked = Notification.objects.get(info_request=awaiting_manager, recipient_user=org.mona_user)
    assert asked.read_at is None
    employee_answer = Notification.objects.get(kind="answer", subject__contains="the employee")
    assert employee_answer.recipient_user == alice  # Priya's claim, earlier in the flow
    client.force_login(org.mona_user)
    client.post(f"/access/inbox/{awaiting_manager.pk}/", {"decision": "deny", "comment": "I never asked her."})
    asked.refresh_from_db()
    assert asked.read_at is not None
    answer = Notification.objects.get(kind="answer", subject__contains="the manager")
    assert answer.recipient_user == alice and "denied: I never asked her." in answer.body
    assert answer.url == f"/cases/{awaiting_manager.mutation.case.reference}/"
