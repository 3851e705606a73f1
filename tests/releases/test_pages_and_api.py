"""The release page, the decision with its override confirmation, the API and import_release."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEntry
from casework.releases.models import Release
from tests.releases.conftest import LOW, SEED, release, submit

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_case_page_shows_severity_findings_tool_calls_and_trace(alice_client):
    rel, run = submit(SEED)

    page = alice_client.get(f"/cases/{rel.case.reference}/").content.decode()
    assert 'data-severity="high"' in page
    assert "test_refund_flow" in page and "refund total 0.00 != 19.99" in page
    for tool in ("get_release_summary", "get_test_details", "file_risk_report"):
        assert f'data-tool="{tool}"' in page
    assert f"/cases/{rel.case.reference}/runs/{run.pk}/trace/" in page
    assert "Ask the agent" in page


def test_case_data_is_escaped_on_the_page(alice_client):
    rel, _ = submit(release(LOW, changes=["<script>alert(1)</script> copy"]))
    page = alice_client.get(f"/cases/{rel.case.reference}/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_a_go_on_a_high_report_asks_for_confirmation_then_is_an_override(rita_client):
    rel, _ = submit(SEED)
    url = f"/releases/{rel.release_id}/decide/"

    first = rita_client.post(url, {"outcome": "go", "reason": "Hotfix needed now."}, HTTP_HX_REQUEST="true")
    assert first.status_code == 200 and "Confirm" in first.content.decode()
    assert 'name="confirm_override"' in first.content.decode()
    rel.case.refresh_from_db()
    assert rel.case.status != "closed"

    second = rita_client.post(url, {"outcome": "go", "reason": "Hotfix needed now.", "confirm_override": "1"},
                              HTTP_HX_REQUEST="true")
    assert second.headers["HX-Redirect"] == f"/cases/{rel.case.reference}/"
    rel.case.refresh_from_db()
    decision = rel.case.decisions.get()
    assert rel.case.status == "closed" and decision.outcome == "go" and decision.data["override"] is True
    entry = AuditEntry.objects.get(action="release.override", case_id=rel.case.pk)
    assert entry.data["severity"] == "high" and entry.actor == "rita"


def test_a_decision_that_follows_the_report_needs_no_confirmation(rita_client):
    rel, _ = submit(LOW)
    response = rita_client.post(f"/releases/{rel.release_id}/decide/", {"outcome": "go", "reason": "Clean."})
    assert response.status_code == 302
    assert rel.case.decisions.get().data == {"report_id": rel.reports.get().report_id, "severity": "low",
                                             "override": False}
    assert AuditEntry.objects.filter(action="release.decided", case_id=rel.case.pk).exists()


def test_the_api_takes_a_release_and_names_every_bad_field(api):
    bad = release(SEED, tests={"passed": -1, "failed": 2}, deployment_metrics={"error_rate": 3},
                  test_details=[{"name": "x", "status": "broken"}])
    response = api.post("/api/releases/", bad, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"tests.passed", "deployment_metrics.error_rate", "test_details.0.status"}
    assert not Release.objects.exists()

    created = api.post("/api/releases/", SEED, format="json")
    assert created.status_code == 201
    assert created.json()["reference"].startswith("REL-")
    assert api.post("/api/releases/", SEED, format="json").status_code == 409


def test_the_api_reads_the_report_and_decides_with_a_confirmation(api, rita):
    rel, _ = submit(SEED)

    body = api.get(f"/api/releases/{rel.release_id}/").json()
    assert body["report"]["severity"] == "high"
    assert [c["name"] for c in body["tool_calls"]] == ["get_release_summary", "get_test_details", "file_risk_report"]

    url = f"/api/releases/{rel.release_id}/decision/"
    assert api.post(url, {"outcome": "no_go", "reason": "Refund test fails."}, format="json").status_code == 403
    api.force_authenticate(rita)  # investigators read and comment; release managers decide
    refused = api.post(url, {"outcome": "go", "reason": "Ship it."}, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "override_needs_confirmation"
    decided = api.post(url, {"outcome": "no_go", "reason": "Refund test fails."}, format="json")
    assert decided.status_code == 201 and decided.json()["case_status"] == "closed"


def test_import_release_names_bad_fields_and_imports_nothing(tmp_path):
    path = tmp_path / "releases.json"
    path.write_text(json.dumps([LOW, release(LOW, release_id="bad id!", version="")]))
    with pytest.raises(CommandError) as excinfo:
        call_command("import_release", str(path))
    assert "release 2: release_id" in str(excinfo.value) and "release 2: version" in str(excinfo.value)
    assert not Release.objects.exists()


def test_import_release_queues_the_detective(tmp_path, capsys):
    path = tmp_path / "release.json"
    path.write_text(json.dumps(LOW))
    call_command("import_release", str(path))
    rel = Release.objects.get()
    assert rel.submitted_via == "import"
    assert rel.reports.get().severity == "low"  # Celery is eager in tests: the detective ran on commit
    assert "detective queued" in capsys.readouterr().out


def test_the_openapi_schema_documents_the_release_operations(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    assert {"/api/releases/", "/api/releases/{release_id}/", "/api/releases/{release_id}/decision/"} <= set(schema["paths"])
    assert "409" in schema["paths"]["/api/releases/{release_id}/decision/"]["post"]["responses"]


def test_a_release_pasted_on_the_releases_page_opens_its_case(alice_client):
    bad = alice_client.post("/releases/", {"release_json": json.dumps(release(LOW, version=""))})
    assert bad.status_code == 400 and "<code>version</code>" in bad.content.decode()
    assert alice_client.post("/releases/", {"release_json": "{not json"}).status_code == 400

    response = alice_client.post("/releases/", {"release_json": json.dumps(LOW)})
    rel = Release.objects.get()
    assert response.status_code == 302 and response.url == f"/cases/{rel.case.reference}/"
    listing = alice_client.get("/releases/").content.decode()
    assert rel.release_id in listing and "low" in listing


def test_the_admin_lists_releases_and_reports_read_only(admin_user, client):
    rel, _ = submit(LOW)
    client.force_login(admin_user)
    assert rel.release_id in client.get("/admin/releases/release/").content.decode()
    assert client.get(f"/admin/releases/release/{rel.pk}/change/").status_code == 200
    assert client.get("/admin/releases/riskreport/").status_code == 200
    assert client.get("/admin/releases/release/add/").status_code == 403
