"""The event catalogue: case types register their events (event_type_register) and every
registered event is documented, in the OpenAPI components and in the README's table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from casework.outbox.catalogue import EVENT_TYPES, EventType, event_type_register

ACTION_EVENTS = {"transaction.card_block_requested": "Card block", "access.revert_requested": "Access revert",
                 "release.decided": "Release decision", "fraud.account_freeze_requested": "Account freeze"}


def test_the_types_registered_their_action_events():
    for name, label in ACTION_EVENTS.items():
        assert EVENT_TYPES[name].action == label
        assert {"case", "action"} <= set(EVENT_TYPES[name].data["required"])


def test_registering_the_same_event_again_is_harmless_a_different_one_is_refused():
    event = EVENT_TYPES["release.decided"]
    event_type_register(event)
    assert EVENT_TYPES["release.decided"] is event
    with pytest.raises(ValueError, match="registered already"):
        event_type_register(EventType("release.decided", 2, "Another meaning.", event.data))
    with pytest.raises(ValueError, match="lower case"):
        event_type_register(EventType("Release.Decided", 1, "-", event.data))


def test_the_readme_documents_every_event():
    readme = (Path(settings.BASE_DIR) / "README.md").read_text()
    documented = set(re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \| (\d+) \|", readme, re.M))
    assert documented == {(e.name, str(e.version)) for e in EVENT_TYPES.values()}


# What a receiver reads in the README's "Outgoing webhooks" table, written out: each event's
# OpenAPI component, its version and the keys its `data` always has.
DOCUMENTED = {
    "case.created": ("WebhookEventCaseCreatedV1", 1, ["case"]),
    "case.assigned": ("WebhookEventCaseAssignedV1", 1, ["case", "previous_assignee", "assignee"]),
    "case.decided": ("WebhookEventCaseDecidedV1", 1, ["case", "decision"]),
    "case.merged": ("WebhookEventCaseMergedV1", 1, ["case", "survivor", "decision", "moved"]),
    "run.completed": ("WebhookEventRunCompletedV1", 1, ["run", "case"]),
    "run.failed": ("WebhookEventRunFailedV1", 1, ["run", "case"]),
    "transaction.card_block_requested": ("WebhookEventTransactionCardBlockRequestedV1", 1,
                                         ["case", "action", "card", "transaction", "recommendation", "rule",
                                          "severity"]),
    "access.revert_requested": ("WebhookEventAccessRevertRequestedV1", 1,
                                ["case", "action", "change", "revert", "decision"]),
    "release.decided": ("WebhookEventReleaseDecidedV1", 1, ["case", "action", "release", "report", "decision"]),
    "fraud.account_freeze_requested": ("WebhookEventFraudAccountFreezeRequestedV1", 1,
                                       ["case", "action", "account", "alert", "decision"]),
    "support.reply_sent": ("WebhookEventSupportReplySentV1", 1, ["case", "ticket_id", "customer_id", "message"]),
}


@pytest.mark.django_db
def test_the_openapi_components_document_every_event(api):
    schemas = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]
    assert {name for name in schemas if name.startswith("WebhookEvent")} == {c for c, _, _ in DOCUMENTED.values()}
    for name, (component, version, data_keys) in DOCUMENTED.items():
        body = schemas[component]
        assert body["properties"]["type"]["enum"] == [name], component
        assert body["properties"]["version"]["enum"] == [version], component
        assert set(body["required"]) == {"id", "type", "version", "timestamp", "data"}, component
        assert sorted(body["properties"]["data"]["required"]) == sorted(data_keys), component
    # What an endpoint may subscribe to: the whole catalogue, registered events included.
    ref = schemas["EndpointInputRequest"]["properties"]["event_types"]["items"]["$ref"]
    assert set(schemas[ref.rsplit("/", 1)[1]]["enum"]) == set(DOCUMENTED)
