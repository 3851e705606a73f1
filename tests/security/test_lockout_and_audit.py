"""Sign-ins: audited, locked out after AXES_FAILURE_LIMIT failures per user and IP, unlocked
by an admin; every Django admin change is an audit entry."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.test import Client

from audit.models import AuditEntry

pytestmark = pytest.mark.django_db


def actions() -> list[str]:
    return list(AuditEntry.objects.order_by("id").values_list("action", flat=True))


def test_logins_failed_logins_and_logouts_are_audited(client, alice):
    client.post("/login/", {"username": "alice", "password": "wrong"})
    client.post("/login/", {"username": "alice", "password": "alice-pass-123"})
    client.post("/logout/")
    assert actions()[-3:] == ["auth.login_failed", "auth.login", "auth.logout"]
    failed = AuditEntry.objects.filter(action="auth.login_failed").first()
    assert failed.data["username"] == "alice" and "wrong" not in str(failed.data)
    assert AuditEntry.objects.get(action="auth.login").actor == "alice"


def test_five_failures_lock_the_user_out_from_that_ip_and_the_lockout_is_audited(client, alice, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/login/", {"username": "alice", "password": "wrong"})
    locked = client.post("/login/", {"username": "alice", "password": "alice-pass-123"})
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    lockout = AuditEntry.objects.filter(action="auth.locked_out").first()
    assert lockout.data["username"] == "alice" and lockout.data["ip"] == "127.0.0.1"
    # Another IP is not locked out for alice.
    elsewhere = Client(REMOTE_ADDR="10.0.0.9")
    assert elsewhere.post("/login/", {"username": "alice", "password": "alice-pass-123"}).status_code == 302


def test_an_admin_unlocks_by_deleting_the_access_attempt(client, alice, admin_user, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/login/", {"username": "alice", "password": "wrong"})
    attempt = AccessAttempt.objects.get(username="alice")
    admin = Client()
    admin.force_login(admin_user)
    response = admin.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not AccessAttempt.objects.exists()
    assert client.post("/login/", {"username": "alice", "password": "alice-pass-123"}).status_code == 302
    unlock = AuditEntry.objects.filter(action="admin.deleted").first()
    assert unlock.actor == "root" and unlock.data["model"] == "accessattempt"


def test_every_admin_change_is_an_audit_entry(admin_user):
    admin = Client()
    admin.force_login(admin_user)
    response = admin.post("/admin/auth/group/add/", {"name": "auditors"})
    assert response.status_code == 302
    entry = AuditEntry.objects.filter(action="admin.added").first()
    assert entry.actor == "root" and entry.data["model"] == "group" and entry.data["object"] == "auditors"
