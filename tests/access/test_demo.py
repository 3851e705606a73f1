"""The demo loader leaves a change in every state, and adds nothing when run again."""

from __future__ import annotations

import pytest

from casework.access.demo import demo_load_access
from casework.access.models import Employee, HRMutation, InfoRequest, System
from casework.cases.demo import demo_people
from casework.cases.notifications.models import Notification

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def users(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.AGENT_APPROVALS = {"send_notification": {"*": "always"}}  # the default (conftest turns it off)
    return demo_people()  # and their teams: IAM (irene, mona) works access changes


def test_the_demo_walks_every_path_and_is_idempotent(users):
    assert demo_load_access(users=users) == 9
    assert Employee.objects.count() == 30
    assert System.objects.count() == 5 and System.objects.filter(available=False).count() == 1
    assert set(Employee.objects.exclude(user=None).values_list("user__username", flat=True)) == {"mona", "mark"}

    def by(changed_by):
        return HRMutation.objects.get(changed_by__employee_id=changed_by)

    def path(m):
        from audit.models import AuditEntry

        return [d["to"] for d in AuditEntry.objects.filter(case_id=m.case_id, action="access.status_changed")
                .order_by("id").values_list("data", flat=True)]

    authorised, approved, denied, invalid, failing = by("u102"), by("u101"), by("u201"), by("u213"), by("u111")
    assert path(authorised) == ["investigation_started", "approved", "advisory_report_generated"]
    assert "approved" in path(approved) and approved.reports.get().recommendation == "accept"
    assert "rejected_manager_denied" in path(denied) and denied.reports.get().recommendation == "reject_investigate"
    assert "rejected_invalid_claim" in path(invalid)
    assert "manual_intervention_required" in path(failing)
    assert failing.reports.get().kind == "manual_intervention"
    assert by("u106").status == "awaiting_user_response"
    assert by("u113").status == "awaiting_manager_response"
    # Issue 13: an explanation no record can confirm is an invalid claim, not a question for the manager.
    assert "rejected_invalid_claim" in path(by("u206")) and by("u206").status == "advisory_report_generated"
    for m in (approved, denied, failing):
        assert m.case.status == "closed"
    assert InfoRequest.objects.get(mutation=by("u106")).reminder_count == 1
    assert InfoRequest.objects.get(mutation=by("u113"), kind="manager_validation").escalated_at is not None
    assert Notification.objects.filter(kind="escalation", recipient_user=users["irene"]).exists()
    # Issue 46: the agents' e-mails were approved as the investigator would; the last one waits.
    from agents.models import RunPause

    waiting = by("u103")
    assert waiting.status == "clarification_requested" and not InfoRequest.objects.filter(mutation=waiting).exists()
    assert RunPause.objects.get(status="pending").case_id == waiting.case_id
    assert RunPause.objects.filter(status="approved", decided_by="irene").count() >= 3

    assert demo_load_access(users=users) == 0
    assert HRMutation.objects.count() == 9 and Employee.objects.count() == 30
