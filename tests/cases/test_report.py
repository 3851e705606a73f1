"""The case report: one A4 PDF with the case, the agents' findings, the decision, tasks,
evidence files and the case's audit entries with their hashes; from the case page and the
API alike, for people who can see the case, each download audited with the PDF's SHA-256."""

from __future__ import annotations

import hashlib
import io
import sys
from unittest import mock

import pytest
from drf_spectacular.generators import SchemaGenerator
from pypdf import PdfReader

from agents.models import AgentRun
from audit.models import AuditEntry
from audit.services import audit_sequence
from casework.cases.attachments.models import Attachment
from casework.cases.models import Case
from casework.cases.report.selectors import summarise_output
from casework.cases.report.services import case_report_generate
from casework.cases.services import case_close, case_create
from casework.cases.tasks.models import Task
from casework.cases.types import CASE_TYPES

pytestmark = pytest.mark.django_db

A4 = (595, 842)  # points, to the nearest point


def pdf_text(content: bytes) -> str:
    reader = PdfReader(io.BytesIO(content))
    return "\n".join(page.extract_text() for page in reader.pages).replace("\xa0", " ")


@pytest.fixture
def decided(alice, ivan):
    """A fraud case an agent run assessed, with a task done, an evidence file, and a decision."""
    case = case_create(actor=alice, case_type="fraud_alert", title="Deposit cycling on ACC-77",
                       description="Deposits cycled out within two days.", priority="high")
    AgentRun.objects.create(case=case, pipeline="fraud", mode="alert_creation", status="completed",
                            provider="offline", state={"results": {
                                "transaction": {"agent": "transaction", "stage": 0, "output": {
                                    "anomaly_score": 0.91, "detected_patterns": ["rapid deposit-withdraw cycling"],
                                    "short_explanation": "Deposits of 7 times the declared income cycled out."}},
                                "geo": {"agent": "geo", "stage": 0, "error": "The provider timed out."},
                                "orchestrator": {"agent": "orchestrator", "stage": 1, "output": {
                                    "risk_level": "high", "confidence": 0.8, "priority": "high",
                                    "investigation_summary": "HIGH risk: money cycled far beyond income."}},
                            }})
    Task.objects.create(case=case, title="Call the customer", position=1, assignee=ivan, done=True,
                        done_by=ivan, done_at=case.created_at)
    Task.objects.create(case=case, title="Freeze the account", position=2)
    Attachment.objects.create(case=case, file="case-attachments/x/statement.pdf", original_name="statement.pdf",
                              size=2048, sha256="ab" * 32, content_type="application/pdf", uploaded_by=alice)
    case_close(actor=alice, case=case, outcome="confirmed_fraud", reason="Mule pattern; the customer admitted it.")
    audit_sequence()
    return Case.objects.get(pk=case.pk)


def test_the_report_holds_the_case_findings_decision_tasks_files_and_audit_hashes(alice_client, decided):
    response = alice_client.get(f"/cases/{decided.reference}/report.pdf")

    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert f'filename="{decided.reference}-report.pdf"' in response["Content-Disposition"]
    reader = PdfReader(io.BytesIO(response.content))
    assert all(tuple(round(float(v)) for v in page.mediabox[2:]) == A4 for page in reader.pages)
    text = pdf_text(response.content)
    for expected in (decided.reference, "Deposit cycling on ACC-77", "Fraud alert", "High",
                     "Orchestrator", "HIGH risk: money cycled far beyond income.", "Recommendation",
                     "Failed: The provider timed out.",
                     "Confirmed fraud", "Mule pattern; the customer admitted it.", "Decided by alice",
                     "Call the customer", "by ivan", "Freeze the account", "statement.pdf", "2.0 KB", "ab" * 32,
                     "verify_audit_chain", "Page 1 of"):
        assert expected in text, expected
    entries = AuditEntry.objects.filter(case_id=decided.pk, position__isnull=False)
    closed = entries.get(action="case.closed")
    assert closed.hash in text and str(closed.position) in text
    assert all(e.hash in text for e in entries)


def test_a_download_is_audited_with_the_pdfs_sha256(alice_client, decided):
    response = alice_client.get(f"/cases/{decided.reference}/report.pdf")

    entry = AuditEntry.objects.get(case_id=decided.pk, action="case.report_downloaded")
    digest = hashlib.sha256(response.content).hexdigest()
    assert entry.actor == "alice" and entry.data["sha256"] == digest == response["X-Report-SHA256"]
    assert entry.data["via"] == "web" and entry.data["bytes"] == len(response.content)


def test_the_api_answers_the_same_report_as_a_pdf(api, decided):
    response = api.get(f"/api/cases/{decided.reference}/report/", HTTP_ACCEPT="application/pdf")

    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert decided.reference in pdf_text(response.content)
    entry = AuditEntry.objects.get(case_id=decided.pk, action="case.report_downloaded")
    assert entry.data == {"sha256": hashlib.sha256(response.content).hexdigest(), "bytes": len(response.content),
                          "via": "api", "format": "pdf"}
    assert api.get(f"/api/cases/{decided.reference}/report/").status_code == 200  # no Accept: */*


def test_the_api_refuses_json_and_unknown_cases_in_json(api, decided):
    refused = api.get(f"/api/cases/{decided.reference}/report/", HTTP_ACCEPT="application/json")
    assert refused.status_code == 406 and "application/pdf" in refused.json()["detail"]
    missing = api.get("/api/cases/FRA-999999/report/", HTTP_ACCEPT="application/pdf")
    assert missing.status_code == 404 and missing["Content-Type"] == "application/json"
    assert not AuditEntry.objects.filter(action="case.report_downloaded").exists()


def test_only_people_who_can_see_the_case_get_its_report(client, mona, decided):
    assert client.get(f"/cases/{decided.reference}/report.pdf").status_code == 302  # to the login page
    client.force_login(mona)
    assert client.get(f"/cases/{decided.reference}/report.pdf").status_code == 403
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(mona)
    assert api.get(f"/api/cases/{decided.reference}/report/", HTTP_ACCEPT="application/pdf").status_code == 403
    assert not AuditEntry.objects.filter(action="case.report_downloaded").exists()


def test_without_weasyprint_the_report_is_a_503_saying_what_to_install(alice_client, api, decided):
    with mock.patch.dict(sys.modules, {"weasyprint": None}):  # `import weasyprint` raises ImportError
        page = alice_client.get(f"/cases/{decided.reference}/report.pdf")
        answer = api.get(f"/api/cases/{decided.reference}/report/", HTTP_ACCEPT="application/pdf")

    assert page.status_code == 503 and "libpango" in page.content.decode()
    assert answer.status_code == 503 and answer.json()["code"] == "report_unavailable"
    assert "WeasyPrint" in answer.json()["detail"]


def test_every_case_type_has_a_report(alice):
    for key, case_type in CASE_TYPES.items():
        case = case_create(actor=alice, case_type=key, title=f"A {case_type.label.lower()}")
        text = pdf_text(case_report_generate(actor=alice, case=case).pdf)
        assert case.reference in text and case_type.label in text and "No decision yet" in text, key


def test_the_case_page_offers_the_download(alice_client, decided):
    page = alice_client.get(f"/cases/{decided.reference}/").content.decode()
    assert f'href="/cases/{decided.reference}/report.pdf"' in page and "Download report" in page


def test_an_agent_output_reads_as_words():
    summary = summarise_output({"risk_level": "manual_intervention", "confidence": 0.812345, "ok": True,
                                "findings": ["one", "two"], "summary": "x " * 60, "_private": 1})
    assert ("Risk level", "Manual intervention") in summary["facts"]
    assert ("Confidence", "0.8123") in summary["facts"] and ("Ok", "yes") in summary["facts"]
    assert summary["lists"] == [("Findings", ["one", "two"], 2)]
    assert summary["paragraphs"][0][0] == "Summary"


def test_the_schema_documents_the_report_as_a_pdf():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/cases/{reference}/report/"]["get"]
    assert operation["responses"]["200"]["content"]["application/pdf"]["schema"] == {
        "type": "string", "format": "binary"}
    assert "503" in operation["responses"] and "404" in operation["responses"]


def test_the_report_carries_the_key_and_a_signed_checkpoint_an_auditor_can_check(alice, decided, settings, tmp_path):
    """The report's checkpoint and public key are enough to check the signature offline, and the
    checkpoint vouches for the case's entries (its position is at or past theirs)."""
    import html
    import re

    from audit.checkpoint_services import audit_checkpoint_publish
    from audit.checkpoints import checkpoint_parse, public_key_parse, signing_key_generate
    from casework.cases.report.services import case_report_html

    settings.AUDIT_SIGNING_KEY = signing_key_generate().decode()
    settings.STORAGES = {**settings.STORAGES, "audit_checkpoints": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path)}}}
    published = audit_checkpoint_publish(force=True).signed
    page = case_report_html(case=decided, actor=alice)
    section = page[page.index('id="report-checkpoint"'):]
    note, pem = (html.unescape(t) for t in re.findall(r'<pre class="hash">(.*?)</pre>', section, re.S))
    signed = checkpoint_parse(note)
    key = signed.signed_by([public_key_parse(pem)])
    assert signed.checkpoint == published.checkpoint and key.key_id in section
    last_entry = AuditEntry.objects.filter(case_id=decided.pk).order_by("-position").first()
    assert signed.checkpoint.position >= last_entry.position


def test_without_a_key_the_report_says_no_checkpoint_is_signed(alice, decided, settings):
    from casework.cases.report.services import case_report_html

    settings.AUDIT_SIGNING_KEY = ""
    page = case_report_html(case=decided, actor=alice)
    assert "No checkpoint signing key is configured on this server." in page


def test_a_reference_to_a_case_outside_the_readers_teams_is_not_in_their_report(alice, client):
    """The page's answers have hidden references replaced on their way out (casework/cases/redaction);
    a PDF is no text answer, so the report does it before rendering: a support agent's report of a
    ticket whose description names a fraud alert shows the placeholder, a fraud investigator's the
    reference."""
    from casework.cases.redaction import HIDDEN
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create
    from casework.people.teams import team_create, team_member_set

    fraud = case_create(actor=alice, case_type="fraud_alert", title="Mule account")
    ticket = case_create(actor=alice, case_type="support_ticket", title="Card blocked",
                         description=f"The block comes from the fraud team's {fraud.reference}.")
    sam = user_create(actor="system", username="sam", password="sam-pass-123", role=INVESTIGATOR)
    team_member_set(actor="system", team=team_create(actor="system", name="Support desk",
                                                     case_types=["support_ticket"]), user=sam)
    client.force_login(sam)
    response = client.get(f"/cases/{ticket.reference}/report.pdf")
    assert response.status_code == 200
    text = pdf_text(response.content)
    assert fraud.reference not in text and HIDDEN in text.replace("\n", " ")
    client.force_login(alice)
    assert fraud.reference in pdf_text(client.get(f"/cases/{ticket.reference}/report.pdf").content)
