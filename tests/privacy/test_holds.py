"""Legal holds (issue 42.1): placed and lifted by a lead or an admin with a reason, on record,
refused to anyone else, through the service and the API, and shown on the case page."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from rest_framework.test import APIClient

from audit.models import AuditEntry
from casework.people.roles import DATA_PROTECTION, INVESTIGATOR
from casework.people.services import user_create
from casework.privacy.holds import legal_hold_lift, legal_hold_place
from casework.privacy.models import LegalHold
from tests.cases.teams_people import teams_made
from tests.privacy.conftest import NOW, closed_case, entity

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_lead_places_and_lifts_a_hold_on_record():
    t = teams_made()
    hold = legal_hold_place(actor=t.leo, case=t.fraud_case, reason="Litigation 2030-17.")
    entry = AuditEntry.objects.get(action="legal_hold.placed")
    assert (entry.case_id, entry.actor, entry.data["reason"]) == (t.fraud_case.pk, "leo", "Litigation 2030-17.")

    legal_hold_lift(actor=t.leo, hold=hold, reason="Settled.")
    hold.refresh_from_db()
    assert hold.lifted_by == t.leo and hold.lift_reason == "Settled."
    assert AuditEntry.objects.filter(action="legal_hold.lifted", case_id=t.fraud_case.pk).count() == 1
    with pytest.raises(ValidationError):
        legal_hold_lift(actor=t.leo, hold=hold, reason="Again.")


def test_it_is_refused_to_a_member_who_does_not_lead_and_to_another_team():
    t = teams_made()
    for person in (t.fay, t.sam):
        with pytest.raises(PermissionDenied):
            legal_hold_place(actor=person, case=t.fraud_case, reason="Because.")
    hold = legal_hold_place(actor=t.leo, case=t.fraud_case, reason="Litigation.")
    with pytest.raises(PermissionDenied):
        legal_hold_lift(actor=t.fay, hold=hold, reason="Done.")
    assert LegalHold.objects.count() == 1 and not AuditEntry.objects.filter(action="legal_hold.lifted").exists()


def test_it_needs_a_reason_and_one_subject():
    t = teams_made()
    with pytest.raises(ValidationError):
        legal_hold_place(actor=t.leo, case=t.fraud_case, reason="  ")
    with pytest.raises(ValidationError):
        legal_hold_place(actor=t.leo, reason="Neither.")


def test_a_data_protection_officer_holds_an_entity(admin_user):
    dpo = user_create(actor="system", username="dora", password="dora-pass-123", role=DATA_PROTECTION)
    closed_case("support_ticket", closed_at=NOW, customer="CUST-009")
    hold = legal_hold_place(actor=dpo, entity=entity("customer", "CUST-009"), reason="Police request 88.")
    assert AuditEntry.objects.get(action="legal_hold.placed").data["entity_id"] == hold.entity_id
    investigator = user_create(actor="system", username="ivy", password="ivy-pass-123", role=INVESTIGATOR)
    with pytest.raises(PermissionDenied):
        legal_hold_place(actor=investigator, entity=hold.entity, reason="No.")


def test_the_api_places_and_lifts_and_hides_a_case_the_person_may_not_see():
    t = teams_made()
    response = _api(t.leo).post("/api/legal-holds/", {"case": t.fraud_case.reference, "reason": "Litigation."},
                                format="json")
    assert response.status_code == 201, response.content
    hold_id = response.json()["id"]
    # Sam (support) may not see the fraud case: it answers as one that does not exist.
    refused = _api(t.sam).post("/api/legal-holds/", {"case": t.fraud_case.reference, "reason": "x"}, format="json")
    missing = _api(t.sam).post("/api/legal-holds/", {"case": "FRA-999999", "reason": "x"}, format="json")
    assert refused.status_code == missing.status_code == 400
    assert str(refused.json()).replace(t.fraud_case.reference, "FRA-999999") == str(missing.json())
    assert _api(t.sam).post(f"/api/legal-holds/{hold_id}/lift/", {"reason": "x"}, format="json").status_code == 404
    assert _api(t.fay).post(f"/api/legal-holds/{hold_id}/lift/", {"reason": "x"}, format="json").status_code == 403
    lifted = _api(t.leo).post(f"/api/legal-holds/{hold_id}/lift/", {"reason": "Settled."}, format="json")
    assert lifted.status_code == 200 and lifted.json()["lift_reason"] == "Settled."


def test_the_case_page_shows_the_hold(client):
    t = teams_made()
    legal_hold_place(actor=t.leo, case=t.fraud_case, reason="Litigation 2030-17.")
    client.force_login(t.fay)
    page = client.get(f"/cases/{t.fraud_case.reference}/").content.decode()
    assert 'id="case-legal-hold"' in page and "Litigation 2030-17." in page


def test_the_admin_places_a_hold_through_the_service(admin_user, client):
    t = teams_made()
    admin_user.is_staff = True
    admin_user.save()
    client.force_login(admin_user)
    response = client.post("/admin/privacy/legalhold/add/", {"case": t.fraud_case.pk, "reason": "Litigation 9."})
    assert response.status_code == 302, response.content.decode()[:2000]
    hold = LegalHold.objects.get()
    assert (hold.case, hold.placed_by) == (t.fraud_case, admin_user)
    assert AuditEntry.objects.filter(action="legal_hold.placed", actor="root").count() == 1
    client.post(f"/admin/privacy/legalhold/{hold.pk}/change/", {"lift_reason": "Settled."})
    hold.refresh_from_db()
    assert hold.lifted_by == admin_user and AuditEntry.objects.filter(action="legal_hold.lifted").count() == 1
