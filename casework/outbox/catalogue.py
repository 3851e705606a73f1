"""The event catalogue: every event type, its version and the JSON Schema of its `data`.

The same table is the README's "Outgoing webhooks" list, the OpenAPI components
(`WebhookEvent...`, added by casework.outbox.schema.add_event_components) and what the tests
validate every emitted payload against. A change that breaks a receiver gets a new version.
"""

from __future__ import annotations

from dataclasses import dataclass

CASE = {
    "type": "object",
    "required": ["reference", "case_type", "title", "status", "priority", "assignee", "url"],
    "properties": {
        "reference": {"type": "string", "example": "FRA-000042"},
        "case_type": {"type": "string", "example": "fraud_alert"},
        "title": {"type": "string"},
        "status": {"type": "string"},
        "priority": {"type": "string"},
        "assignee": {"type": "string", "nullable": True, "description": "User name, or null."},
        "url": {"type": "string", "description": "The case page's path."},
    },
}
RUN = {
    "type": "object",
    "required": ["id", "pipeline", "mode", "status", "error", "steps", "finished_at"],
    "properties": {
        "id": {"type": "integer"},
        "pipeline": {"type": "string"},
        "mode": {"type": "string"},
        "status": {"type": "string", "description": "completed, completed_with_errors, failed or timed_out."},
        "error": {"type": "string"},
        "steps": {"type": "integer"},
        "finished_at": {"type": "string", "format": "date-time", "nullable": True},
    },
}


# What every action event's `data.action` says: how to confirm it and by when
# (casework/cases/actions/services.py; the model is casework.outbox.models.Action).
ACTION = {
    "type": "object",
    "required": ["id", "kind", "requested_by", "requested_at", "deadline", "confirm_url"],
    "properties": {
        "id": {"type": "string", "description": "The event's id: the action is confirmed under it."},
        "kind": {"type": "string", "example": "Card block", "description": "What is asked, in words."},
        "requested_by": {"type": "string", "nullable": True, "description": "The person who decided (user name)."},
        "requested_at": {"type": "string", "format": "date-time"},
        "deadline": {"type": "string", "format": "date-time",
                     "description": "Confirm before this, or the case flags the action as overdue."},
        "confirm_url": {"type": "string", "example": "/api/actions/evt_4f9c0d3b8e5a4c2f9a1b7d6e5c4b3a21/confirmation",
                        "description": "POST {\"status\": \"confirmed\" | \"failed\", \"reason\"?, \"reference\"?} "
                                       "here, signed like our webhooks with the endpoint's secret."},
    },
}


@dataclass(frozen=True)
class EventType:
    name: str
    version: int
    description: str
    data: dict
    # An action event asks another system to do something (block a card, revert a change):
    # `action` names it ("Card block"), and each event of the type is tracked as an Action
    # (requested, delivered, confirmed or failed). "" for a plain notification.
    action: str = ""

    @property
    def component(self) -> str:
        return "WebhookEvent" + "".join(part.capitalize() for part in self.name.replace(".", "_").split("_")) \
            + f"V{self.version}"


def _data(**properties) -> dict:
    return {"type": "object", "required": list(properties), "properties": properties}


DECISION = _data(outcome={"type": "string"}, outcome_label={"type": "string"}, reason={"type": "string"},
                 decided_by={"type": "string", "nullable": True},
                 decided_at={"type": "string", "format": "date-time"})


EVENT_TYPES: dict[str, EventType] = {e.name: e for e in (
    EventType("case.created", 1, "A case was opened.", _data(case=CASE)),
    EventType("case.assigned", 1, "A case's assignee changed (to someone, or to nobody).",
              _data(case=CASE, previous_assignee={"type": "string", "nullable": True},
                    assignee={"type": "string", "nullable": True})),
    EventType("case.decided", 1, "A person recorded the case's final decision; the case is closed.",
              _data(case=CASE, decision=DECISION)),
    EventType("run.completed", 1, "An agent run ended with its results (some agents may have failed: "
                                  "status completed_with_errors).",
              _data(run=RUN, case={**CASE, "nullable": True})),
    EventType("run.failed", 1, "An agent run failed or timed out.",
              _data(run=RUN, case={**CASE, "nullable": True})),
)}


def event_type_register(event: EventType) -> None:
    """Add a case type's event to the catalogue (from its AppConfig.ready): it is then
    accepted by event_record, offered to endpoints' subscriptions, documented in the OpenAPI
    components. Registering the same definition again is harmless; a different one under a
    taken name is refused (a receiver relies on one meaning per name and version)."""
    existing = EVENT_TYPES.get(event.name)
    if existing is not None and existing != event:
        raise ValueError(f"The event type {event.name!r} is registered already, differently.")
    if not event.name.count(".") == 1 or event.name != event.name.lower():
        raise ValueError(f"An event type is named <subject>.<what_happened>, in lower case: not {event.name!r}.")
    EVENT_TYPES[event.name] = event


def action_data(**properties) -> dict:
    """The schema of an action event's data: `case`, `action` (how to confirm it) and the type's own fields."""
    return _data(case=CASE, action=ACTION, **properties)


def envelope_schema(event: EventType) -> dict:
    """The whole body an endpoint receives for this event type."""
    return {
        "type": "object",
        "description": f"`{event.name}` v{event.version}: {event.description} Sent as a Standard Webhooks "
                       "POST; `id` is the `webhook-id` header, the same on every retry.",
        "required": ["id", "type", "version", "timestamp", "data"],
        "properties": {
            "id": {"type": "string", "example": "evt_4f9c0d3b8e5a4c2f9a1b7d6e5c4b3a21"},
            "type": {"type": "string", "enum": [event.name]},
            "version": {"type": "integer", "enum": [event.version]},
            "timestamp": {"type": "string", "format": "date-time", "description": "When the event happened."},
            "data": event.data,
        },
    }


def add_event_components(result, generator, request, public):
    """drf-spectacular post-processing hook: the catalogue as OpenAPI components."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for event in EVENT_TYPES.values():
        schemas[event.component] = envelope_schema(event)
    return result
