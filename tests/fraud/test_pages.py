from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from audit.models import AuditEntry
from casework.fraud.models import Alert, KnowledgePattern
from casework.fraud.services import pattern_capture
from tests.fraud.conftest import CLEAN, CYCLING
from tests.fraud.test_import import csv_text

pytestmark = pytest.mark.django_db


def upload(client, text, **extra):
    return client.post("/fraud/import/", {"file": SimpleUploadedFile("alerts.csv", text.encode(), "text/csv"),
                                          **extra})


def test_the_import_page_shows_the_form(alice_client):
    response = alice_client.get("/fraud/import/")
    assert response.status_code == 200
    assert b'type="file"' in response.content
    assert b"Skip invalid rows" in response.content


def test_uploading_a_file_creates_cases_and_links_them(alice_client):
    response = upload(alice_client, csv_text([CYCLING, CLEAN]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Imported 2 alerts." in page
    assert 'href="/cases/FRA-000001/"' in page and 'href="/cases/FRA-000002/"' in page
    audit = AuditEntry.objects.filter(action="fraud.alert_created").first()
    assert audit.actor == "alice" and audit.data["via"] == "csv_upload"


def test_a_file_with_bad_rows_shows_each_line_and_field(alice_client):
    rows = [CLEAN, {**CLEAN, "vpn_usage_pct": 300}, {**CLEAN, "device_shared_count": "two"}]
    response = upload(alice_client, csv_text(rows))
    assert response.status_code == 400
    page = response.content.decode()
    assert "Nothing imported" in page
    assert "<td>3</td><td><code>vpn_usage_pct</code></td><td>Must be between 0 and 100; got &#x27;300&#x27;.</td>" in page
    assert "<td>4</td><td><code>device_shared_count</code></td>" in page
    assert "count the header as line 1" in page
    assert not Alert.objects.exists()


def test_skip_invalid_imports_the_rest(alice_client):
    rows = [CLEAN, {**CLEAN, "vpn_usage_pct": 300}, CYCLING]
    response = upload(alice_client, csv_text(rows), skip_invalid="on")
    assert response.status_code == 200
    assert "Imported 2 alerts; skipped 1 invalid row." in response.content.decode()
    assert Alert.objects.count() == 2


def test_an_unknown_column_is_named_on_the_page(alice_client):
    response = upload(alice_client, csv_text([CLEAN]).replace("account_id", "acct", 1))
    assert response.status_code == 400
    page = response.content.decode()
    assert "line 1: unknown column &#x27;acct&#x27;" in page
    assert "line 1: missing required column &#x27;account_id&#x27;" in page


def test_uploading_without_a_file_is_a_form_error(alice_client):
    response = alice_client.post("/fraud/import/", {})
    assert response.status_code == 400
    assert b"This field is required" in response.content


def test_only_investigators_may_import(client, mona):
    client.force_login(mona)
    assert client.get("/fraud/import/").status_code == 403
    assert upload(client, csv_text([CLEAN])).status_code == 403
    assert not Alert.objects.exists()


@pytest.fixture
def patterns(alice, make_alert, decide):
    made = []
    for account, outcome, signals, description in [
        ("ACC-1", "confirmed_fraud", ["shared device", "shared IP"], "One of a ring of mule accounts."),
        ("ACC-2", "legit", ["many countries"], "A frequent traveller, not fraud."),
    ]:
        decision = decide(make_alert(account_id=account), alice, outcome=outcome)
        made.append(pattern_capture(decision=decision, actor="system", pattern={
            "key_signals": signals, "behavioral_pattern": f"Pattern of {account}.",
            "final_outcome": outcome, "one_sentence_description": description}))
    return made


def test_the_patterns_page_lists_captured_patterns(alice_client, patterns):
    response = alice_client.get("/fraud/patterns/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "One of a ring of mule accounts." in page and "A frequent traveller, not fraud." in page
    assert "Confirmed fraud" in page and "Marked legit" in page
    assert "2 patterns" in page


@pytest.mark.parametrize(("q", "found"), [
    ("shared device", ["ACC-1"]),  # every word must match, over signals ...
    ("traveller", ["ACC-2"]),  # ... the description ...
    ("pattern acc-2", ["ACC-2"]),  # ... the behavioural pattern and the account
    ("nothing-like-this", []),
])
def test_the_patterns_page_searches(alice_client, patterns, q, found):
    response = alice_client.get("/fraud/patterns/", {"q": q})
    listed = [p.account.account_id for p in response.context["page"].object_list]
    assert listed == found


def test_an_htmx_search_returns_only_the_results(alice_client, patterns):
    response = alice_client.get("/fraud/patterns/", {"q": "mule"}, HTTP_HX_REQUEST="true",
                                HTTP_HX_TARGET="pattern-results")
    page = response.content.decode()
    assert "<html" not in page
    assert "One of a ring of mule accounts." in page and "frequent traveller" not in page


def test_an_empty_search_says_so(alice_client, patterns):
    response = alice_client.get("/fraud/patterns/", {"q": "<script>"})
    page = response.content.decode()
    assert "No captured pattern matches" in page
    assert "<script>" not in page.split("<main")[1]  # escaped


def test_only_investigators_see_patterns(client, mona):
    client.force_login(mona)
    assert client.get("/fraud/patterns/").status_code == 403


def test_the_nav_links_to_the_fraud_pages(alice_client):
    assert b'href="/fraud/patterns/"' in alice_client.get("/fraud/import/").content


# --- admin ------------------------------------------------------------------------------

def test_adding_an_alert_in_the_admin_goes_through_the_service(client, admin_user):
    client.force_login(admin_user)
    form = {**{k: str(v) for k, v in CYCLING.items()}, "risk_factors": "", "risk_level": ""}
    response = client.post("/admin/fraud/alert/add/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    alert = Alert.objects.get()
    assert alert.case.title == "Account ACC-1043: deposit-withdraw cycling"
    assert alert.score_source == "casework_scorer"
    assert AuditEntry.objects.get(action="fraud.alert_created").data["via"] == "admin"


def test_the_admin_add_form_names_bad_fields(client, admin_user):
    client.force_login(admin_user)
    form = {**{k: str(v) for k, v in CYCLING.items()}, "vpn_usage_pct": "150", "risk_factors": ""}
    response = client.post("/admin/fraud/alert/add/", form)
    assert response.status_code == 200
    assert "Must be between 0 and 100; got 150.0." in response.content.decode()
    assert not Alert.objects.exists()


def test_the_admin_lists_and_shows_alerts_and_patterns(client, admin_user, patterns):
    client.force_login(admin_user)
    assert client.get("/admin/fraud/alert/?q=ACC-1").status_code == 200
    assert client.get("/admin/fraud/account/?q=ACC").status_code == 200
    assert client.get(f"/admin/fraud/alert/{Alert.objects.first().pk}/change/").status_code == 200
    assert client.get("/admin/fraud/knowledgepattern/").status_code == 200
    assert client.get(f"/admin/fraud/knowledgepattern/{patterns[0].pk}/change/").status_code == 200
    add = client.get("/admin/fraud/alert/add/")
    assert add.status_code == 200
    assert b'name="account_id"' in add.content and b'name="risk_factors"' in add.content


def test_editing_a_pattern_in_the_admin_updates_the_decision_copy(client, admin_user, patterns):
    client.force_login(admin_user)
    pattern = patterns[0]
    response = client.post(f"/admin/fraud/knowledgepattern/{pattern.pk}/change/", {
        "key_signals": '["shared device"]', "behavioral_pattern": "Mule ring.",
        "final_outcome": "Confirmed Fraud", "one_sentence_description": "Edited by an admin."})
    assert response.status_code == 302, response.content.decode()[:2000]
    pattern = KnowledgePattern.objects.get(pk=pattern.pk)
    assert pattern.one_sentence_description == "Edited by an admin."
    assert pattern.decision.data["knowledge_pattern"]["one_sentence_description"] == "Edited by an admin."


def test_the_alert_facts_partial_renders_features_and_scores(make_alert):
    from django.template.loader import render_to_string

    alert = make_alert(**CYCLING)
    html = render_to_string("fraud/_alert_facts.html", {"alert": alert})
    assert "ACC-1043" in html and "Casework scorer" in html
    assert "<code>deposit_withdraw_cycle_days_avg</code></dt><dd>1.30</dd>" in html
    assert "<code>deposits_total</code></dt><dd>148,500</dd>" in html
