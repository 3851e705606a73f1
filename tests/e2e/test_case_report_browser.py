"""The case report from a decided case's page: "Download report" gives the PDF, which holds
the case reference, the decision with its reason, and the case's audit hashes."""

from __future__ import annotations

import hashlib

import pytest
from pypdf import PdfReader

from audit.models import AuditEntry
from casework.cases.services import case_close, case_create
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from tests.conftest import in_every_team

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_report_downloads_from_a_decided_cases_page(page, log_in, tmp_path):
    alice = in_every_team(user_create(actor="system", username="alice", password="alice-pass-123",
                                      role=INVESTIGATOR))
    case = case_create(actor=alice, case_type="fraud_alert", title="Deposit cycling on ACC-77", priority="high")
    case_close(actor=alice, case=case, outcome="confirmed_fraud", reason="Mule pattern; the customer admitted it.")
    log_in(page, "alice", "alice-pass-123")

    page.goto(f"/cases/{case.reference}/")
    with page.expect_download() as info:
        page.get_by_role("button", name="Download report").click()
    download = info.value
    assert download.suggested_filename == f"{case.reference}-report.pdf"
    path = tmp_path / download.suggested_filename
    download.save_as(path)

    content = path.read_bytes()
    text = "\n".join(p.extract_text() for p in PdfReader(path).pages)
    closed = AuditEntry.objects.get(case_id=case.pk, action="case.closed")
    assert case.reference in text and "Confirmed fraud" in text
    assert "Mule pattern; the customer admitted it." in text
    assert closed.hash and closed.hash in text
    downloaded = AuditEntry.objects.get(case_id=case.pk, action="case.report_downloaded")
    assert downloaded.data["sha256"] == hashlib.sha256(content).hexdigest() and downloaded.actor == "alice"
    assert not page.js_errors
