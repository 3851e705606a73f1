"""The cases API: list, detail, assign, comment, close. Errors are JSON naming the field,
never a 500."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from audit.models import AuditEntry
from casework.cases.models import Case, Comment, Decision
from casework.cases.services import case_assign, case_close, case_create

pytestmark = pytest.mark.django_db


def make_case(actor, **kwargs):
    return case_create(actor=actor, case_type=kwargs.pop("case_type", "fraud_alert"),
                       title=kwargs.pop("title", "Deposit cycling"), **kwargs)


@pytest.fixture
def cases(alice, ivan, rita):
    """Five cases of mixed type, priority, status and assignee."""
    fra1 = make_case(alice, title="Deposit cycling", priority="low")
    fra2 = make_case(alice, title="Shared device ring", priority="critical")
    sup = make_case(alice, case_type="support_ticket", title="Refund not received", priority="high")
    acc = make_case(alice, case_type="access_change", title="Payroll write access", priority="medium")
    rel = make_case(alice, case_type="release_risk", title="Release v2.1.0", priority="high")
    case_assign(actor=alice, case=fra2, assignee=alice)
    case_assign(actor=alice, case=sup, assignee=ivan)
    case_close(actor=rita, case=rel, outcome="go", reason="Green suite")  # releases: a release manager
    return {"fra1": fra1, "fra2": fra2, "sup": sup, "acc": acc, "rel": rel}


def refs(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [c["reference"] for c in response.json()["results"]]


# --- list --------------------------------------------------------------------------------

def test_it_lists_cases_newest_first(api, cases):
    response = api.get("/api/cases/")
    body = response.json()
    assert body["count"] == 5
    assert refs(response) == ["REL-000001", "ACC-000001", "SUP-000001", "FRA-000002", "FRA-000001"]
    first = body["results"][0]
    assert first["status"] == "closed" and first["case_type"] == "release_risk"
    assert set(first) >= {"reference", "case_type", "title", "status", "priority", "assignee", "created_at"}


def test_it_filters_by_case_type(api, cases):
    assert refs(api.get("/api/cases/", {"case_type": "fraud_alert"})) == ["FRA-000002", "FRA-000001"]


def test_it_filters_by_status(api, cases):
    assert refs(api.get("/api/cases/", {"status": "in_progress"})) == ["SUP-000001", "FRA-000002"]
    assert refs(api.get("/api/cases/", {"status": "closed"})) == ["REL-000001"]


def test_it_filters_by_priority(api, cases):
    assert refs(api.get("/api/cases/", {"priority": "high"})) == ["REL-000001", "SUP-000001"]


def test_it_filters_by_assignee_username(api, cases):
    assert refs(api.get("/api/cases/", {"assignee": "ivan"})) == ["SUP-000001"]
    assert refs(api.get("/api/cases/", {"assignee": "alice"})) == ["FRA-000002"]


def test_it_filters_unassigned_cases(api, cases):
    assert refs(api.get("/api/cases/", {"assignee": "none"})) == ["REL-000001", "ACC-000001", "FRA-000001"]


def test_it_searches_reference_and_title(api, cases):
    assert refs(api.get("/api/cases/", {"q": "refund"})) == ["SUP-000001"]
    assert refs(api.get("/api/cases/", {"q": "fra-000001"})) == ["FRA-000001"]
    assert refs(api.get("/api/cases/", {"q": "nothing like this"})) == []


def test_it_combines_filters(api, cases):
    assert refs(api.get("/api/cases/", {"case_type": "fraud_alert", "assignee": "none"})) == ["FRA-000001"]


def test_it_orders_by_priority(api, cases):
    ordered = refs(api.get("/api/cases/", {"ordering": "priority"}))
    priorities = [Case.objects.get(reference=r).priority for r in ordered]
    assert priorities[0] == "critical" and priorities[-1] == "low"
    assert refs(api.get("/api/cases/", {"ordering": "-priority"}))[0] == "FRA-000001"


def test_it_orders_by_reference(api, cases):
    assert refs(api.get("/api/cases/", {"ordering": "reference"}))[:2] == ["ACC-000001", "FRA-000001"]


def test_an_unknown_filter_value_is_a_400_naming_the_field(api, cases):
    for params, field in [({"status": "sleeping"}, "status"), ({"assignee": "nobody"}, "assignee"),
                          ({"ordering": "title"}, "ordering"), ({"case_type": "x"}, "case_type")]:
        response = api.get("/api/cases/", params)
        assert response.status_code == 400, params
        assert field in response.json()


def test_it_paginates_by_25(api, alice):
    for i in range(27):
        make_case(alice, title=f"Case {i}")
    first = api.get("/api/cases/").json()
    assert first["count"] == 27 and len(first["results"]) == 25
    assert first["next"].endswith("page=2") and first["previous"] is None
    second = api.get("/api/cases/", {"page": 2}).json()
    assert len(second["results"]) == 2
    assert api.get("/api/cases/", {"page": 9}).status_code == 404
    assert api.get("/api/cases/", {"page": "abc"}).status_code == 404


# --- detail ------------------------------------------------------------------------------

def test_detail_by_reference(api, cases, alice):
    case_close(actor=alice, case=cases["fra1"], outcome="legit", reason="Known customer")
    body = api.get("/api/cases/fra-000001/").json()
    assert body["reference"] == "FRA-000001"
    assert body["title"] == "Deposit cycling"
    assert body["status"] == "closed"
    assert body["decision"]["outcome"] == "legit"
    assert body["decision"]["outcome_label"] == "Marked legit"
    assert body["decision"]["decided_by"] == "alice"
    assert body["comments"] == []


def test_an_unknown_reference_is_a_json_404(api, db):
    response = api.get("/api/cases/FRA-999999/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert "detail" in response.json()
    for action in ("assign", "comments", "close"):
        response = api.post(f"/api/cases/FRA-999999/{action}/", {}, format="json")
        assert response.status_code == 404, action
        assert "detail" in response.json()


# --- assign ------------------------------------------------------------------------------

def test_it_assigns_a_case(api, cases, ivan):
    response = api.post("/api/cases/FRA-000001/assign/", {"assignee": "ivan"}, format="json")
    assert response.status_code == 200
    assert response.json()["assignee"] == "ivan"
    assert response.json()["status"] == "in_progress"
    case = Case.objects.get(reference="FRA-000001")
    assert case.assignee == ivan
    assert AuditEntry.objects.filter(case_id=case.pk, action="case.assigned", actor="alice").exists()


def test_it_unassigns_a_case(api, cases):
    response = api.post("/api/cases/FRA-000002/assign/", {"assignee": None}, format="json")
    assert response.status_code == 200
    assert response.json()["assignee"] is None


def test_assigning_an_unknown_user_names_assignee(api, cases):
    response = api.post("/api/cases/FRA-000001/assign/", {"assignee": "zed"}, format="json")
    assert response.status_code == 400
    assert "zed" in response.json()["assignee"][0]


def test_assigning_a_manager_names_assignee(api, cases, mona):
    response = api.post("/api/cases/FRA-000001/assign/", {"assignee": "mona"}, format="json")
    assert response.status_code == 400
    assert "not an investigator" in response.json()["assignee"][0]


def test_assigning_without_assignee_names_it(api, cases):
    response = api.post("/api/cases/FRA-000001/assign/", {}, format="json")
    assert response.status_code == 400
    assert "assignee" in response.json()


def test_assigning_a_closed_case_is_a_conflict(api, cases):
    response = api.post("/api/cases/REL-000001/assign/", {"assignee": "alice"}, format="json")
    assert response.status_code == 409
    assert "closed" in response.json()["detail"]


# --- comment -----------------------------------------------------------------------------

def test_it_adds_a_comment(api, cases):
    response = api.post("/api/cases/FRA-000001/comments/", {"body": "Called the customer."}, format="json")
    assert response.status_code == 201
    assert response.json()["author"] == "alice"
    assert response.json()["body"] == "Called the customer."
    comment = Comment.objects.get()
    assert comment.case == cases["fra1"]
    detail = api.get("/api/cases/FRA-000001/").json()
    assert [c["body"] for c in detail["comments"]] == ["Called the customer."]


@pytest.mark.parametrize("body", [{"body": ""}, {"body": "   "}, {}, {"body": None}])
def test_an_empty_comment_names_body(api, cases, body):
    response = api.post("/api/cases/FRA-000001/comments/", body, format="json")
    assert response.status_code == 400
    assert "body" in response.json()
    assert not Comment.objects.exists()


def test_an_overlong_comment_names_body(api, cases):
    response = api.post("/api/cases/FRA-000001/comments/", {"body": "x" * 10_001}, format="json")
    assert response.status_code == 400
    assert "body" in response.json()


# --- close -------------------------------------------------------------------------------

def test_it_closes_a_case(api, cases):
    response = api.post("/api/cases/FRA-000001/close/",
                        {"outcome": "confirmed_fraud", "reason": "Mule device"}, format="json")
    assert response.status_code == 201
    assert response.json()["outcome"] == "confirmed_fraud"
    assert response.json()["decided_by"] == "alice"
    case = Case.objects.get(reference="FRA-000001")
    assert case.is_closed
    assert AuditEntry.objects.filter(case_id=case.pk, action="case.closed").count() == 1


def test_closing_with_a_bad_outcome_names_outcome(api, cases):
    response = api.post("/api/cases/FRA-000001/close/", {"outcome": "go", "reason": "x"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert list(body) == ["outcome"]
    assert "confirmed_fraud" in body["outcome"][0]
    assert not Decision.objects.filter(case=cases["fra1"]).exists()


@pytest.mark.parametrize("payload", [{"outcome": "legit"}, {"outcome": "legit", "reason": ""},
                                     {"outcome": "legit", "reason": "   "}])
def test_closing_without_a_reason_names_reason(api, cases, payload):
    response = api.post("/api/cases/FRA-000001/close/", payload, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()


def test_a_second_close_is_a_409_naming_who_closed_it(api, cases, ivan):
    case_close(actor=ivan, case=cases["fra1"], outcome="legit", reason="Known customer")
    response = api.post("/api/cases/FRA-000001/close/", {"outcome": "confirmed_fraud", "reason": "No"},
                        format="json")
    assert response.status_code == 409
    assert "already closed by ivan" in response.json()["detail"]
    assert response.json()["code"] == "already_closed"
    assert Decision.objects.filter(case=cases["fra1"]).count() == 1


# --- bad input never 500s ----------------------------------------------------------------

@pytest.mark.parametrize("path", ["assign/", "comments/", "close/"])
@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2, 3]", b'"just a string"', b"null", b"",
                                 b'{"outcome": ["legit"], "reason": {"a": 1}, "body": ["x"], "assignee": {"u": 7}}',
                                 b"\xff\xfe\x00"])
def test_garbage_bodies_get_a_4xx_not_a_500(api, alice, path, raw):
    case = make_case(alice)
    response = api.generic("POST", f"/api/cases/{case.reference}/{path}", raw, content_type="application/json")
    assert 400 <= response.status_code < 500, response.content
    assert isinstance(response.json(), dict)


def test_an_unsupported_media_type_is_a_415(api, cases):
    response = api.generic("POST", "/api/cases/FRA-000001/comments/", b"<xml/>", content_type="application/xml")
    assert response.status_code == 415


def test_a_form_encoded_body_works_too(api, cases):
    response = api.post("/api/cases/FRA-000001/comments/", {"body": "Form post"})
    assert response.status_code == 201


# --- schema and docs ---------------------------------------------------------------------

def test_the_schema_is_openapi_3(api, db):
    import yaml

    response = api.get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Casework API"
    assert {"/api/cases/", "/api/cases/{reference}/close/"} <= set(schema["paths"])
    close = schema["paths"]["/api/cases/{reference}/close/"]["post"]
    assert "201" in close["responses"]


def test_the_docs_render_without_a_cdn(alice_client):
    response = alice_client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html
    assert "cdn." not in html and "unpkg" not in html and "jsdelivr" not in html


def test_the_schema_generates_without_warnings(db):
    """Colliding component names and unresolvable fields are warnings drf-spectacular would print."""
    out = io.StringIO()
    call_command("spectacular", "--fail-on-warn", "--validate", stdout=out)
    assert "CaseCloseInputRequest" in out.getvalue()
