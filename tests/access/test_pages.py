"""The investigator's pages: the case page's access tabs, the htmx tab fragments, reporting
a change by form; notifications for everyone with a login."""

from __future__ import annotations

import pytest

from casework.access.models import HRMutation
from casework.access.services import notification_send
from casework.cases.notifications.models import Notification
from casework.cases.services import case_create
from tests.access.conftest import CHANGED_AT

pytestmark = pytest.mark.django_db


def test_the_case_page_shows_the_change_evidence_and_requests(alice_client, asked):
    page = alice_client.get(f"/cases/{asked.mutation.case.reference}/").content.decode()
    for text in ("Change &amp; evidence", "Agent messages", "Answers", "Advisory report &amp; decision",
                 "Awaiting User Response", "Priya Patel (u001)", "Write is below the required Admin",
                 "Clarification from the employee", "Waiting for Priya Patel", "Decide and close"):
        assert text in page, text
    # Waiting for a person: nothing polls.
    assert 'hx-trigger="every 3s"' not in page


def test_a_tab_refreshes_on_its_own_while_agents_work(alice_client, submit):
    mutation = submit(investigate=False)
    from casework.access.states import AccessStatus, mutation_transition

    mutation_transition(actor="system", mutation=mutation, to=AccessStatus.INVESTIGATION_STARTED, reason="t")
    fragment = alice_client.get(f"/access/cases/{mutation.case.reference}/tabs/change/", HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200
    html = fragment.content.decode()
    assert "Agents are working" in html and 'hx-trigger="every 3s"' in html
    assert "<html" not in html
    assert alice_client.get(f"/access/cases/{mutation.case.reference}/tabs/nope/").status_code == 403


def test_a_case_without_a_recorded_change_still_renders(alice_client, alice):
    case = case_create(actor=alice, case_type="access_change", title="Typed in by hand")
    page = alice_client.get(f"/cases/{case.reference}/")
    assert page.status_code == 200
    assert "opened without a recorded change" in page.content.decode()


def test_managers_cannot_open_case_pages_or_tabs(client, org, asked):
    client.force_login(org.mona_user)
    assert client.get(f"/cases/{asked.mutation.case.reference}/").status_code == 403
    assert client.get(f"/access/cases/{asked.mutation.case.reference}/tabs/change/").status_code == 403


def test_an_investigator_reports_a_change_with_the_form(alice_client, org, django_capture_on_commit_callbacks):
    assert alice_client.get("/access/new/").status_code == 200
    with django_capture_on_commit_callbacks() as callbacks:
        response = alice_client.post("/access/new/", {
            "changed_by": org.priya.pk, "changed_for": org.jan.pk, "system": org.finance.pk,
            "access_level": org.admin.pk, "change_type": "update", "field_changed": "Access level",
            "old_value": "Read", "new_value": "Write", "changed_at": "2025-11-10T09:14", "reason": ""})
    mutation = HRMutation.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/cases/{mutation.case.reference}/"
    assert mutation.changed_at == CHANGED_AT
    assert mutation.case.priority == "high"  # Admin is the top level
    assert len(callbacks) == 1  # the investigation starts on commit


def test_a_change_dated_in_the_future_is_refused(alice_client, org):
    response = alice_client.post("/access/new/", {
        "changed_by": org.priya.pk, "changed_for": org.jan.pk, "system": org.finance.pk,
        "access_level": org.admin.pk, "change_type": "update", "field_changed": "Access level",
        "changed_at": "2999-01-01T00:00"})
    assert response.status_code == 400
    assert "cannot be dated in the future" in response.content.decode()
    assert not HRMutation.objects.exists()


def test_the_api_names_unknown_references(api, org):
    response = api.post("/api/access/mutations/", {
        "changed_by": "u404", "changed_for": "u003", "system": "Nowhere", "access_level": "Admin",
        "field_changed": "x", "changed_at": CHANGED_AT.isoformat()}, format="json")
    assert response.status_code == 400
    assert response.json() == {"changed_by": ["No employee 'u404'."], "system": ["No system 'Nowhere'."]}


def test_the_api_refuses_managers_and_answers_404_for_other_case_types(client, org, api, alice):
    from rest_framework.test import APIClient

    manager = APIClient()
    manager.force_authenticate(org.mona_user)
    assert manager.post("/api/access/mutations/", {}, format="json").status_code == 403
    other = case_create(actor=alice, case_type="fraud_alert", title="Not an access change")
    assert api.get(f"/api/access/mutations/{other.reference}/").status_code == 404


def test_notifications_are_listed_counted_and_marked_read(client, org, alice):
    note = notification_send(actor="system", kind="escalation", subject="ACC-1: no answer", body="Please look.",
                             url="/cases/", user=alice)
    client.force_login(alice)
    queue = client.get("/cases/").content.decode()
    assert 'Notifications<span class="nav-count" id="nav-unread">1</span>' in queue
    assert "ACC-1: no answer" in client.get("/notifications/").content.decode()
    opened = client.get(f"/notifications/{note.pk}/")
    assert opened.status_code == 302 and opened["Location"] == "/cases/"
    assert Notification.objects.get().read_at is not None
    client.force_login(org.mona_user)
    assert client.get(f"/notifications/{note.pk}/").status_code == 403


def test_the_admin_lists_and_edits_reference_data(client, admin_user, asked):
    from django.urls import reverse

    client.force_login(admin_user)
    for model in ("accesslevel", "system", "role", "roleauthorisation", "employee", "directauthorisation", "sickleave",
                  "vacation", "hrmutation", "inforequest", "agentmessage", "rightscheck"):
        assert client.get(reverse(f"admin:access_{model}_changelist")).status_code == 200, model
    # The access flow's notifications are the shared ones (casework/cases/notifications).
    assert client.get(reverse("admin:notifications_notification_changelist")).status_code == 200
    system = asked.mutation.system
    response = client.post(reverse("admin:access_system_change", args=[system.pk]),
                           {"code": system.code, "description": "Ledger", "available": ""})
    assert response.status_code == 302
    system.refresh_from_db()
    assert not system.available
    # A mutation's status moves only through the state machine: the admin shows it read-only.
    page = client.get(reverse("admin:access_hrmutation_change", args=[asked.mutation.pk])).content.decode()
    assert 'name="status"' not in page


def test_mark_all_read(client, alice):
    notification_send(actor="system", kind="x", subject="One", body="b", user=alice)
    notification_send(actor="system", kind="x", subject="Two", body="b", user=alice)
    client.force_login(alice)
    assert client.post("/notifications/read-all/").status_code == 302
    assert not Notification.objects.filter(read_at__isnull=True).exists()
