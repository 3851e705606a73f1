"""The import page's manual alert entry and CSV template: one typed alert is checked like a
row of an imported file, opens a case and queues its investigation; the template imports."""

from __future__ import annotations

import io
from unittest import mock

import pytest

from agents.models import AgentRun
from audit.models import AuditEntry
from casework.fraud.csv_import import import_alerts_csv
from casework.fraud.features import REQUIRED_FIELDS
from casework.fraud.manual_entry import TEMPLATE_EXAMPLE
from casework.fraud.models import Alert

pytestmark = pytest.mark.django_db


def typed(**changes) -> dict:
    return {**TEMPLATE_EXAMPLE, "account_id": "ACC-TYPED-7", **changes}


def test_the_csv_template_is_a_header_and_one_row_that_imports_cleanly(alice_client, alice):
    response = alice_client.get("/fraud/import/template.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    header, example, *rest = response.content.decode().splitlines()
    assert header.split(",") == list(REQUIRED_FIELDS) and rest == []

    report = import_alerts_csv(actor=alice, data=response.content)
    assert report.errors == [] and not report.refused and len(report.created) == 1
    assert report.created[0].account.account_id == example.split(",")[0]


def test_the_template_uploads_through_the_import_page(alice_client):
    template = alice_client.get("/fraud/import/template.csv").content
    upload = io.BytesIO(template)
    upload.name = "template.csv"
    page = alice_client.post("/fraud/import/", {"file": upload})
    assert page.status_code == 200 and "Imported 1 alert." in page.content.decode()


def test_the_import_page_offers_the_form_and_the_template(alice_client):
    page = alice_client.get("/fraud/import/").content.decode()
    assert 'action="/fraud/import/alert/"' in page and 'href="/fraud/import/template.csv"' in page
    assert all(f'name="{name}"' in page for name in REQUIRED_FIELDS)


def test_a_typed_alert_opens_a_case_and_queues_its_investigation(alice_client, django_capture_on_commit_callbacks):
    with mock.patch("agents.tasks.run_pipeline.delay") as delay, \
            django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post("/fraud/import/alert/", typed(risk_factors="Fast cycling | New device"))

    alert = Alert.objects.select_related("case", "account").get(account__account_id="ACC-TYPED-7")
    assert response.status_code == 302 and response["Location"] == f"/cases/{alert.case.reference}/"
    run = AgentRun.objects.get(case=alert.case, pipeline="fraud")
    delay.assert_called_once_with(run.pk)
    assert alert.case.case_type == "fraud_alert"
    assert AuditEntry.objects.filter(case_id=alert.case.pk, actor="alice", data__via="manual_entry").exists()


def test_each_bad_field_is_named_with_the_imports_own_message(alice_client, alice):
    bad = typed(account_id="", vpn_usage_pct="150", kyc_face_match_score="very good", deposits_count="-2")
    response = alice_client.post("/fraud/import/alert/", bad)

    page = response.content.decode()
    assert response.status_code == 400 and not Alert.objects.exists()
    csv_line = ",".join(bad[name] for name in REQUIRED_FIELDS)
    report = import_alerts_csv(actor=alice, data=",".join(REQUIRED_FIELDS) + "\n" + csv_line + "\n")
    assert {e.field for e in report.errors} == {"account_id", "vpn_usage_pct", "kyc_face_match_score",
                                                "deposits_count"}
    for error in report.errors:  # the same field and the same words as the file's import
        assert f'id="{error.field}-error"' in page, error.field
        assert f"<code>{error.field}</code>: {error.message}".replace("'", "&#x27;") in page, error
    assert 'value="150"' in page  # what was typed stays in the form


def test_only_investigators_enter_alerts(client, mona):
    client.force_login(mona)
    assert client.post("/fraud/import/alert/", typed()).status_code == 403
    assert client.get("/fraud/import/template.csv").status_code == 403
    assert not Alert.objects.exists()
