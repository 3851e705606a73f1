"""The webhooks API: admins only, the secret shown once, delivery log and replay."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEntry
from casework.outbox.models import Delivery, Endpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_api(admin_user):
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


def test_investigators_are_refused(api):
    assert api.get("/api/webhooks/endpoints/").status_code == 403
    assert api.post("/api/webhooks/endpoints/", {"url": "https://x.example"}, format="json").status_code == 403


def test_the_secret_is_shown_once(admin_api, receiver):
    made = admin_api.post("/api/webhooks/endpoints/", {"url": receiver.url, "event_types": ["case.decided"],
                                                        "description": "CI"}, format="json")
    assert made.status_code == 201, made.json()
    secret = made.json()["secret"]
    assert secret.startswith("whsec_")
    pk = made.json()["id"]
    assert "secret" not in admin_api.get(f"/api/webhooks/endpoints/{pk}/").json()
    assert all("secret" not in e for e in admin_api.get("/api/webhooks/endpoints/").json())
    rotated = admin_api.post(f"/api/webhooks/endpoints/{pk}/rotate-secret/").json()
    assert rotated["secret"] != secret and rotated["rotating_until"]
    assert not [e for e in AuditEntry.objects.all() if secret in str(e.data) or rotated["secret"] in str(e.data)]


def test_an_unsafe_url_is_refused_with_the_error_body(admin_api, settings):
    settings.WEBHOOK_ALLOWED_HOSTS = []
    refused = admin_api.post("/api/webhooks/endpoints/", {"url": "https://127.0.0.1/x"}, format="json")
    assert refused.status_code == 400 and "loopback" in refused.json()["url"][0]
    unknown = admin_api.post("/api/webhooks/endpoints/", {"url": "https://127.0.0.1/x", "event_types": ["nope"]},
                             format="json")
    assert unknown.status_code == 400 and "event_types" in unknown.json()


def test_update_disable_and_audit(admin_api, endpoint):
    changed = admin_api.patch(f"/api/webhooks/endpoints/{endpoint.pk}/", {"enabled": False}, format="json")
    assert changed.status_code == 200 and changed.json()["enabled"] is False
    assert changed.json()["event_types"] == []  # untouched by a partial update
    entry = AuditEntry.objects.get(action="webhook.endpoint_updated")
    assert entry.data == {"changed": {"enabled": {"from": True, "to": False}}}


def test_the_delivery_log_and_replay(admin_api, alice, receiver, endpoint, settings,
                                     django_capture_on_commit_callbacks):
    from casework.cases.services import case_create

    settings.WEBHOOK_RETRY_SCHEDULE = [5]
    receiver.script = [500, 500, 500, 500]
    first = case_create(actor=alice, case_type="fraud_alert", title="Logged")
    second = case_create(actor=alice, case_type="fraud_alert", title="Also logged")
    from django.utils import timezone

    from casework.outbox.tasks import outbox_deliver_due

    # Two attempts each, both answered 500: both deliveries are dead.
    outbox_deliver_due(now=timezone.now() + timezone.timedelta(minutes=2))
    outbox_deliver_due(now=timezone.now() + timezone.timedelta(minutes=4))
    log = admin_api.get(f"/api/webhooks/endpoints/{endpoint.pk}/deliveries/?state=dead").json()
    assert len(log) == 2 and [entry["attempts"] for entry in log] == [2, 2]
    assert [a["status"] for a in log[0]["attempt_log"]] == [500, 500]
    assert log[0]["attempt_log"][0]["response"] == "receiver says no"
    one = next(entry for entry in log if entry["case"] == first.reference)
    with django_capture_on_commit_callbacks(execute=True):
        replayed = admin_api.post(f"/api/webhooks/deliveries/{one['id']}/replay/")
    assert replayed.status_code == 200
    assert Delivery.objects.get(pk=one["id"]).state == Delivery.State.DELIVERED
    assert Delivery.objects.get(event__case=second).state == Delivery.State.DEAD
    # "Replay failed" sends the one still dead, and only it.
    with django_capture_on_commit_callbacks(execute=True):
        assert admin_api.post(f"/api/webhooks/endpoints/{endpoint.pk}/replay-failed/").json() == {"replayed": 1}
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.DELIVERED}
    assert len(receiver.received) == 6  # 2 x 2 failed attempts, then one replay each
    assert admin_api.get(f"/api/webhooks/endpoints/{endpoint.pk}/deliveries/?state=dead").json() == []
    assert Endpoint.objects.count() == 1


def test_the_admin_adds_an_endpoint_and_shows_its_secret_once(admin_user, client, receiver):
    client.force_login(admin_user)
    assert client.get("/admin/outbox/endpoint/add/").status_code == 200
    added = client.post("/admin/outbox/endpoint/add/", {
        "url": receiver.url, "description": "From the admin", "enabled": "on", "event_types": ["case.decided"],
        "timeout_seconds": "5", "owner": admin_user.pk}, follow=True)
    endpoint = Endpoint.objects.get()
    assert endpoint.event_types == ["case.decided"] and endpoint.secret in added.content.decode()
    assert endpoint.secret not in client.get(f"/admin/outbox/endpoint/{endpoint.pk}/change/").content.decode()
    rotated = client.post("/admin/outbox/endpoint/", {"action": "rotate_secret", "_selected_action": [endpoint.pk]},
                          follow=True)
    endpoint.refresh_from_db()
    assert endpoint.secret in rotated.content.decode() and endpoint.previous_secret
    assert AuditEntry.objects.filter(action="webhook.secret_rotated").exists()
