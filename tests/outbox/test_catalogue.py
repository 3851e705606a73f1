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


@pytest.mark.django_db
def test_the_openapi_components_document_every_event(api):
    schemas = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]
    for event in EVENT_TYPES.values():
        assert schemas[event.component]["properties"]["type"]["enum"] == [event.name]
    assert "WebhookEventTransactionCardBlockRequestedV1" in schemas
    # What an endpoint may subscribe to: the whole catalogue, registered events included.
    ref = schemas["EndpointInputRequest"]["properties"]["event_types"]["items"]["$ref"]
    assert set(schemas[ref.rsplit("/", 1)[1]]["enum"]) == set(EVENT_TYPES)
