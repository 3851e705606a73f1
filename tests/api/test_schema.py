"""The OpenAPI schema documents every error an operation can answer with, says which
operations are public, and says what it means: every default is a value its own schema takes,
and a field that can answer null is declared nullable."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator
from jsonschema import Draft4Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4
from rest_framework import serializers

pytestmark = pytest.mark.django_db

# Where the defaults test puts the schema for its $refs; the keys that make a dict a schema object.
ROOT = "urn:casework:openapi"
SCHEMA_KEYS = {"type", "$ref", "allOf", "oneOf", "anyOf", "enum", "nullable"}


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
    # The employee's signed link, and the signed callback of a system that carried out an action.
    assert public == {"POST /api/access/answers/employee/", "POST /api/actions/{id}/confirmation"}
    assert "401" in schema["paths"]["/api/actions/{id}/confirmation"]["post"]["responses"]
    assert "410" in schema["paths"]["/api/access/answers/employee/"]["post"]["responses"]


def test_the_alert_intake_answers_an_object_or_a_list(schema):
    body = schema["paths"]["/api/fraud/alerts/"]["post"]["responses"]["201"]["content"]["application/json"]
    assert [v.get("type") for v in body["schema"]["oneOf"]] == [None, "array"]


def test_an_unrouted_api_path_answers_json(api):
    response = api.get("/api/no/such/thing/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_every_default_is_a_value_its_own_schema_takes(schema):
    """A default its own schema refuses is a broken contract: openapi-python-client drops the
    model (and every operation that takes it) when a default is not among its enum's values,
    as it dropped POST /api/cases/bulk/ for a priority defaulting to ""."""
    registry = Registry().with_resource(ROOT, Resource(contents=_json_schema(schema), specification=DRAFT4))
    refused = []
    for where, node in _schemas_with_a_default(schema, "#"):
        rest = _json_schema({key: value for key, value in node.items() if key != "default"})
        for error in Draft4Validator(rest, registry=registry).iter_errors(node["default"]):
            refused.append(f"{where}: default {node['default']!r}: {error.message}")
    assert not refused, "\n".join(refused)


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


def _schemas_with_a_default(node, where):
    """(JSON pointer, schema) for every schema object in the document that has a default."""
    if isinstance(node, dict):
        if "default" in node and SCHEMA_KEYS & set(node):
            yield where, node
        for key, value in node.items():
            if key not in {"default", "example", "examples"}:
                yield from _schemas_with_a_default(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _schemas_with_a_default(value, f"{where}/{index}")


def _json_schema(node):
    """OpenAPI 3.0's schema dialect as JSON Schema draft 4 (whose exclusiveMinimum it shares):
    `nullable: true` admits null, and references point into the document under ROOT."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: (ROOT + value if key == "$ref" and isinstance(value, str) else _json_schema(value))
                 for key, value in node.items()}
    if converted.get("nullable") is True:
        del converted["nullable"]
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


def _subclasses(cls):
    for subclass in cls.__subclasses__():
        yield subclass
        yield from _subclasses(subclass)


def test_the_served_schema_is_made_once_and_still_needs_a_sign_in(api, client):
    """GET /api/schema/ keeps its rendered bytes per process (casework/api_schema_view.py):
    the second answer is the first's, in each format, and a caller who is not signed in still
    gets 401 once the cache holds it."""
    from casework import api_schema_view

    api_schema_view._rendered.clear()
    yaml_first, yaml_again = api.get("/api/schema/"), api.get("/api/schema/")
    json_first = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert yaml_first.status_code == yaml_again.status_code == json_first.status_code == 200
    assert yaml_again.content == yaml_first.content and yaml_again["Content-Type"] == yaml_first["Content-Type"]
    assert yaml_again["Content-Disposition"] == yaml_first["Content-Disposition"]
    assert json_first.json()["openapi"].startswith("3.") and json_first.content != yaml_first.content
    assert len(api_schema_view._rendered) == 2
    assert client.get("/api/schema/").status_code == 401
