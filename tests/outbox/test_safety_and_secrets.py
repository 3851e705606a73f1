"""SSRF refusals at save and at send; secret rotation a receiver on either secret verifies."""

from __future__ import annotations

import socket

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from casework.cases.services import case_create
from casework.outbox.models import Delivery
from casework.outbox.safety import url_resolve_checked
from casework.outbox.services import endpoint_create, endpoint_rotate_secret
from casework.outbox.tasks import outbox_deliver_due

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", [
    "https://127.0.0.1/hook", "https://localhost/hook", "https://10.0.0.5/hook", "https://192.168.1.1/hook",
    "https://169.254.169.254/latest/meta-data/", "https://[::1]/hook", "https://[fd00::1]/hook",
    "https://0.0.0.0/hook", "https://[::ffff:127.0.0.1]/hook",
])
def test_internal_addresses_are_refused(url, settings):
    settings.WEBHOOK_ALLOWED_HOSTS = []
    with pytest.raises(ValidationError) as refused:
        url_resolve_checked(url)
    assert "WEBHOOK_ALLOWED_HOSTS" in str(refused.value)


def test_plain_http_is_refused_unless_debug_or_allow_listed(settings, monkeypatch):
    settings.WEBHOOK_ALLOWED_HOSTS = []
    public = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", 80))]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: public)
    with pytest.raises(ValidationError, match="https"):
        url_resolve_checked("http://hooks.example.com/x")
    assert url_resolve_checked("https://hooks.example.com/x") == ["93.184.215.14"]
    settings.DEBUG = True
    assert url_resolve_checked("http://hooks.example.com/x") == ["93.184.215.14"]


def test_the_allow_list_takes_names_addresses_and_cidrs(settings):
    settings.WEBHOOK_ALLOWED_HOSTS = ["127.0.0.0/8"]
    assert url_resolve_checked("http://127.0.0.1:9/x") == ["127.0.0.1"]
    settings.WEBHOOK_ALLOWED_HOSTS = ["localhost"]
    assert "127.0.0.1" in url_resolve_checked("http://localhost:9/x")


def test_an_endpoint_is_refused_at_save(admin_user, settings):
    settings.WEBHOOK_ALLOWED_HOSTS = []
    with pytest.raises(ValidationError):
        endpoint_create(actor=admin_user, url="https://169.254.169.254/")


def test_a_name_that_resolves_inward_after_saving_is_refused_at_send(alice, receiver, endpoint, settings):
    """DNS rebinding: allowed when saved, then the allow-list no longer names it."""
    settings.WEBHOOK_ALLOWED_HOSTS = []
    case_create(actor=alice, case_type="fraud_alert", title="Rebound")
    outbox_deliver_due(now=timezone.now() + timezone.timedelta(hours=1))
    delivery = Delivery.objects.get()
    assert delivery.state == Delivery.State.RETRYING and delivery.last_status is None
    assert delivery.last_error.startswith("Refused") and receiver.received == []


def test_during_a_rotation_a_receiver_on_either_secret_verifies(alice, admin_user, receiver, endpoint,
                                                                 django_capture_on_commit_callbacks):
    from audit.models import AuditEntry

    old = receiver.secrets[0]
    endpoint, new = endpoint_rotate_secret(actor=admin_user, endpoint=endpoint)
    assert new != old and new.startswith("whsec_")
    receiver.secrets = [old, new]
    with django_capture_on_commit_callbacks(execute=True):
        case_create(actor=alice, case_type="fraud_alert", title="Rotating")
    got = receiver.received[-1]
    assert got.verified_by == [old, new]  # one holding only the old, one holding only the new: both pass
    assert len(got.headers["webhook-signature"].split(" ")) == 2
    # After the overlap only the new secret signs.
    later = timezone.now() + timezone.timedelta(days=2)
    assert endpoint.signing_secrets(later) == [new]
    entries = AuditEntry.objects.filter(action__startswith="webhook.")
    assert entries.count() == 2
    assert all(old not in str(e.data) and new not in str(e.data) for e in entries)
