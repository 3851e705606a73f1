"""Helpers for the outbox tests: validate a body against the catalogue's schema, deliver what
is due, sign a callback as the receiving system would."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from django.utils import timezone
from jsonschema import Draft4Validator
from standardwebhooks import Webhook

from casework.outbox.catalogue import EVENT_TYPES, envelope_schema


def _json_schema(schema):
    """OpenAPI 3.0's `nullable` as JSON Schema's type list, to validate with jsonschema."""
    if isinstance(schema, dict):
        out = {k: _json_schema(v) for k, v in schema.items() if k not in ("nullable", "example")}
        if schema.get("nullable") and "type" in schema:
            out["type"] = [schema["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        return out
    return [_json_schema(v) for v in schema] if isinstance(schema, list) else schema


def validate(body: dict) -> None:
    """The whole body against its event type's envelope; additional properties are refused too
    (a field sent but not documented is a documentation bug)."""
    schema = _json_schema(envelope_schema(EVENT_TYPES[body["type"]]))
    Draft4Validator(_closed(schema)).validate(body)


def _closed(schema):
    if isinstance(schema, dict):
        out = {k: _closed(v) for k, v in schema.items()}
        if schema.get("type") in ("object", ["object", "null"]) and "properties" in schema:
            out["additionalProperties"] = False
        return out
    return [_closed(v) for v in schema] if isinstance(schema, list) else schema


def deliver_due() -> int:
    """Send everything due now, as the beat sweep would (a minute on, past the wake-up guard)."""
    from casework.outbox.tasks import outbox_deliver_due

    return outbox_deliver_due(now=timezone.now() + timedelta(minutes=2))


def signed(secret: str, payload, *, msg_id: str = "cb_1") -> tuple[bytes, dict]:
    """A callback body and its Standard Webhooks headers, signed with `secret` now."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    at = datetime.now(UTC)
    headers = {"webhook-id": msg_id, "webhook-timestamp": str(int(at.timestamp())),
               "webhook-signature": Webhook(secret).sign(msg_id=msg_id, timestamp=at, data=body.decode())}
    return body, headers


def as_client_headers(headers: dict) -> dict:
    """Django test client keyword arguments for these headers."""
    return {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()}
