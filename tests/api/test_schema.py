"""The OpenAPI schema documents every error an operation can answer with, says which
operations are public, and says that a field that can answer null is nullable."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework import serializers

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


def test_a_field_that_can_answer_null_is_declared_nullable():
    """A serializer field with default=None answers null when its source is missing (the
    `decided_by` of a recommendation nobody has decided); without allow_null=True the schema
    says it is always a string, and a typed client fails on the null."""
    from casework import urls  # noqa: F401 - imports every API view and so every serializer

    checked, undeclared = 0, []
    for serializer in _subclasses(serializers.Serializer):
        if not serializer.__module__.startswith(("casework.", "agents.")):
            continue
        for name, field in serializer().fields.items():
            checked += 1
            if field.default is None and not field.allow_null:
                undeclared.append(f"{serializer.__module__}.{serializer.__qualname__}.{name}")
    assert checked > 200  # the API's serializers were found
    assert not undeclared


def _subclasses(cls):
    for subclass in cls.__subclasses__():
        yield subclass
        yield from _subclasses(subclass)
