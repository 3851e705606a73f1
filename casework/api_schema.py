"""The OpenAPI schema's error contract, added to every operation after drf-spectacular built it.

Each operation documents every status the shared machinery can answer with, each with the
one error body `casework.api_errors.exception_handler` writes: 400 (bad JSON, a field or a
query parameter), 401/403 (authentication, role), 404, 405, 406, 409 (every operation that
changes something: a state it meets may refuse it, whether or not it takes a body, such as
marking a done task done), 410 (a used signed link), 413 and 415 (a body) and 429 (throttled;
Retry-After). An operation's own description of a status wins: only what it leaves out is
added. An operation with no authentication says so: `security: []`.

Operations that take an object or a list answer the same shape: their 201 is a oneOf. The
object they take is a component (`pydantic_component`), referred to by both branches: an inline
copy in each is, to a client generator, two models of one name, and it drops the operation."""

from __future__ import annotations

ERROR_SCHEMA = {
    "type": "object",
    "description": (
        "An error. `detail` says what went wrong (and `code` names it) for authentication, "
        "permission, not found, conflict and throttling; a 400 for bad input is keyed by field or "
        "query parameter, each with a list of messages (`non_field_errors` for the whole body)."
    ),
    "properties": {
        "detail": {"type": "string"},
        "code": {"type": "string"},
    },
    "additionalProperties": {},
}

DESCRIPTIONS = {
    "400": "Bad input: malformed JSON, an invalid field or an unknown query parameter value, keyed by name.",
    "401": "No credentials, or a token that is unknown, expired or revoked.",
    "403": "Authenticated, but this role may not do this.",
    "404": "No such object (or page).",
    "405": "This path does not take this method.",
    "406": "The Accept header asks for something other than JSON.",
    "409": "The action collides with one that already happened (a second decision, a stale state).",
    "410": "The signed link was used, expired or withdrawn.",
    "413": "The request body is too large.",
    "415": "The body is not JSON (or a form, where one is taken).",
    "429": "Too many requests; the Retry-After header says how many seconds to wait.",
}
ALL = ["400", "404", "405", "406", "429"]
AUTHENTICATED = ["401", "403"]
CHANGES_STATE = ["409"]  # POST, PUT, PATCH and DELETE
WITH_BODY = ["413", "415"]
PUBLIC = ["410"]
# Operations that take one object or a list and answer in kind: operation id -> success
# status, registered by the API module that defines the operation (object_or_list_register).
OBJECT_OR_LIST: dict[str, str] = {}
# Pydantic models the schema refers to by name (pydantic_component), added to its components.
PYDANTIC_COMPONENTS: dict[str, dict] = {}


def _error(status: str) -> dict:
    return {"description": DESCRIPTIONS[status],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _openapi_30_bounds(node):
    """Pydantic writes `exclusiveMinimum: 0` (JSON Schema 2020-12); OpenAPI 3.0 wants
    `minimum: 0, exclusiveMinimum: true`. Rewritten in place, everywhere in the schema."""
    if isinstance(node, list):
        for item in node:
            _openapi_30_bounds(item)
    elif isinstance(node, dict):
        for bound, key in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            value = node.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                node[bound], node[key] = value, True
        for value in node.values():
            _openapi_30_bounds(value)


def document_errors(result, generator, request, public):
    """drf-spectacular POSTPROCESSING_HOOKS entry."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components.update(PYDANTIC_COMPONENTS)
    components["Error"] = ERROR_SCHEMA
    _openapi_30_bounds(result)
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            is_public = not operation.get("security")
            if is_public:
                operation["security"] = []
            statuses = [*ALL, *([] if is_public else AUTHENTICATED), *(PUBLIC if is_public else []),
                        *(CHANGES_STATE if method != "get" else []),
                        *(WITH_BODY if "requestBody" in operation else [])]
            responses = operation.setdefault("responses", {})
            for status in statuses:
                documented = responses.get(status)
                if documented is None:
                    responses[status] = _error(status)
                elif "content" not in documented:
                    documented["content"] = _error(status)["content"]
            # An error the operation documents itself (a signed callback's 401) has the same body.
            for status, documented in responses.items():
                if status in DESCRIPTIONS and "content" not in documented:
                    documented["content"] = _error(status)["content"]
            status = OBJECT_OR_LIST.get(operation.get("operationId"))
            if status:
                media = responses[status]["content"]["application/json"]
                one = media["schema"]
                media["schema"] = {"oneOf": [one, {"type": "array", "items": one}]}
    return result


def object_or_list_register(operation_id: str, status: str) -> None:
    OBJECT_OR_LIST[operation_id] = status


def pydantic_component(model) -> dict:
    """A reference to the Pydantic model's schema, which document_errors puts under components
    by the model's name: for a model an operation's schema names more than once."""
    PYDANTIC_COMPONENTS[model.__name__] = pydantic_openapi_30(model.model_json_schema())
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def pydantic_openapi_30(schema):
    """Pydantic writes JSON Schema 2020-12; OpenAPI 3.0 wants `nullable` and a single `example`."""
    if isinstance(schema, list):
        return [pydantic_openapi_30(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: pydantic_openapi_30(value) for key, value in schema.items()}
    variants = schema.get("anyOf")
    if variants and {"type": "null"} in variants:
        rest = [v for v in variants if v != {"type": "null"}]
        schema.pop("anyOf")
        schema.pop("default", None)
        schema.update(rest[0] if len(rest) == 1 else {"anyOf": rest})
        schema["nullable"] = True
    if "examples" in schema and isinstance(schema["examples"], list):
        examples = schema.pop("examples")
        if examples:
            schema["example"] = examples[0]
    return schema
