"""Subject access (issue 42.4): the zip of everything held about a customer who appears in a
fraud alert, a support ticket (with an inbound e-mail and an attachment) and a transaction
investigation; only for admins and data-protection officers, with a reason, on record; from the
service, the API and the admin."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from audit.models import AuditEntry
from casework.cases.attachments.services import attachment_upload
from casework.cases.types import Found
from casework.entities.extraction import entities_record
from casework.people.roles import DATA_PROTECTION
from casework.people.services import user_create
from casework.privacy.subject import subject_access_export, subject_held
from casework.support.models import InboundEmail
from tests.privacy.conftest import NOW, PDF, closed_case, entity
from tests.support.conftest import send

# The support ticket's intake and triage runs start on commit.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def customer(support_data, alice):
    """CUST-002 named by a fraud alert, a transaction investigation and a ticket with an inbound
    e-mail and an attachment; CUST-001 by another case, which the export must leave out."""
    fraud = closed_case("fraud_alert", closed_at=NOW - timedelta(days=10), customer="CUST-002")
    txn = closed_case("transaction_investigation", closed_at=NOW, customer="CUST-002")
    closed_case("support_ticket", closed_at=NOW, customer="CUST-001")
    _, ticket = send(alice, "CUST-002", "I was charged twice for invoice 1234, please refund.")
    entities_record(case=ticket.case, found=[Found("customer", "CUST-002", "customer_id")])
    InboundEmail.objects.create(provider="test", message_id="<m1@example.net>", from_email="piet@example.net",
                                from_name="Piet", subject="Double charge", raw="From: piet@example.net\n\nHi",
                                text="Hi", stripped="Hi", outcome="opened", ticket=ticket, customer=ticket.customer)
    attachment_upload(actor="system", case=ticket.case, upload=SimpleUploadedFile("invoice.pdf", PDF),
                      received_from="piet@example.net")
    return {"entity": entity("customer", "CUST-002"), "cases": {fraud.reference, txn.reference, ticket.case.reference},
            "ticket": ticket.case.reference}


@pytest.fixture
def dpo(db):
    return user_create(actor="system", username="dora", password="dora-pass-123", role=DATA_PROTECTION)


def _zip(content: bytes) -> tuple[dict, dict, set[str]]:
    archive = zipfile.ZipFile(io.BytesIO(content))
    names = set(archive.namelist())
    return json.loads(archive.read("subject.json")), json.loads(archive.read("report.json")), names


def test_the_zip_holds_every_case_naming_the_customer_and_the_files(customer, dpo):
    export = subject_access_export(actor=dpo, entity=customer["entity"], reason="Request by e-mail, 2030-05-02.")
    data, report, names = _zip(export.content)

    assert {c["reference"] for c in data["cases"]} == customer["cases"] == set(report["cases"])
    ticket = next(c for c in data["cases"] if c["reference"] == customer["ticket"])
    assert ticket["record"]["raw_emails"][0]["raw"].startswith("From: piet@example.net")
    assert ticket["record"]["messages"][0]["text"].startswith("I was charged twice")
    assert ticket["record"]["customer"]["customer_id"] == "CUST-002"
    assert ticket["agent_calls"]  # the intake and triage calls on the ticket
    files = [a["file"] for c in data["cases"] for a in c["attachments"]]
    assert len(files) == 3 and set(files) <= names  # the letters of the two closed cases, the invoice
    assert any(f.endswith("invoice.pdf") for f in files)
    assert all(c["named_as"] for c in data["cases"]) and all(c["decisions"] is not None for c in data["cases"])
    assert report["included"]["cases"] == 3 and report["included"]["attachments"] == 3
    assert data["subject"] == {"entity_id": customer["entity"].pk, "kind": "customer", "value": "CUST-002"}


def test_the_finder_is_what_erasure_will_reuse(customer):
    held = subject_held(customer["entity"])
    assert set(held.cases.values_list("reference", flat=True)) == customer["cases"]
    assert held.attachments.count() == 3 and held.mentions.count() == 3


def test_it_is_on_record_naming_the_request_not_the_data(customer, dpo):
    export = subject_access_export(actor=dpo, entity=customer["entity"], reason="Request by e-mail.")
    entry = AuditEntry.objects.get(action="subject_access.exported")
    assert entry.data["request"] == export.request_ref and entry.data["entity_id"] == customer["entity"].pk
    assert "piet" not in json.dumps(entry.data).lower() and "charged" not in json.dumps(entry.data)


def test_it_is_refused_to_an_investigator(customer, alice):
    with pytest.raises(PermissionDenied):
        subject_access_export(actor=alice, entity=customer["entity"], reason="Curious.")
    response = _api(alice).post(f"/api/entities/{customer['entity'].pk}/subject-access/", {"reason": "Curious."},
                                format="json")
    assert response.status_code == 403
    assert not AuditEntry.objects.filter(action="subject_access.exported").exists()


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_api_returns_the_zip(customer, dpo):
    response = _api(dpo).post(f"/api/entities/{customer['entity'].pk}/subject-access/",
                              {"reason": "Request by post."}, format="json")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    data, report, _ = _zip(response.content)
    assert report["request"] == response["X-Subject-Access-Request"]
    assert {c["reference"] for c in data["cases"]} == customer["cases"]
    assert _api(dpo).post(f"/api/entities/{customer['entity'].pk}/subject-access/", {}, format="json").status_code == 400


def test_the_admin_action_shows_the_report_and_the_download(customer, admin_user, client):
    admin_user.is_staff = True
    admin_user.save()
    client.force_login(admin_user)
    url = "/admin/entities/entity/"
    asked = client.post(url, {"action": "subject_access", "_selected_action": [customer["entity"].pk]})
    assert asked.status_code == 200 and 'name="reason"' in asked.content.decode()
    done = client.post(url, {"action": "subject_access", "_selected_action": [customer["entity"].pk],
                             "reason": "Request by phone."}).content.decode()
    assert 'id="sar-report"' in done and 'id="sar-download"' in done and "data:application/zip;base64," in done
    assert AuditEntry.objects.filter(action="subject_access.exported", actor="root").count() == 1
