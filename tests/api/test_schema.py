"""The OpenAPI schema documents every error an operation can answer with, and says which
operations are public."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                yield f"{method.upper()} {path}", operation


def test_every_operation_documents_the_shared_errors_with_the_error_body(schema):
    for name, operation in operations(schema):
        for status in ("400", "404", "405", "429"):
            assert status in operation["responses"], f"{name} does not document {status}"
            assert "content" in operation["responses"][status], f"{name} {status} has no body"
        if operation["security"]:
            assert {"401", "403"} <= set(operation["responses"]), name
        if "requestBody" in operation:
            assert {"413", "415"} <= set(operation["responses"]), name
    assert schema["components"]["schemas"]["Error"]["properties"]["detail"] == {"type": "string"}


def test_every_operation_that_changes_something_documents_409(schema):
    """Whatever changes something can meet a state that refuses it, body or not: marking a done
    task done, adding a closed case's checklist."""
    undocumented = [name for name, operation in operations(schema)
                    if not name.startswith("GET ") and "409" not in operation["responses"]]
    assert not undocumented


def test_the_signed_link_endpoint_is_public_and_everything_else_needs_a_token(schema):
    public = {name for name, op in operations(schema) if op["security"] == []}
    assert public == {"POST /api/access/answers/employee/"}
    assert "410" in schema["paths"]["/api/access/answers/employee/"]["post"]["responses"]


def test_the_alert_intake_answers_an_object_or_a_list(schema):
    body = schema["paths"]["/api/fraud/alerts/"]["post"]["responses"]["201"]["content"]["application/json"]
    assert [v.get("type") for v in body["schema"]["oneOf"]] == [None, "array"]


def test_an_unrouted_api_path_answers_json(api):
    response = api.get("/api/no/such/thing/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
