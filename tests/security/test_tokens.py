"""API tokens: hashed at rest, expiring, revocable one by one, last use shown to admins; a
DRF token made before the move keeps working."""

from __future__ import annotations

import hashlib
import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from casework.security.models import ApiToken
from casework.security.tokens import api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db


def call(secret: str) -> int:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return api.get("/api/cases/").status_code


def test_the_secret_is_not_stored(alice):
    token, secret = api_token_create(actor="system", user=alice)
    row = ApiToken.objects.get(pk=token.pk)
    assert secret not in (row.digest, row.prefix) and row.digest == hashlib.sha256(secret.encode()).hexdigest()
    assert row.expires_at > timezone.now() + timedelta(days=89)


def test_a_token_works_until_it_expires(alice):
    token, secret = api_token_create(actor="system", user=alice)
    assert call(secret) == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    response = api.get("/api/cases/")
    assert response.status_code == 401 and response.json()["detail"] == "This token has expired."


def test_a_revoked_token_is_refused_and_the_others_still_work(alice):
    first, first_secret = api_token_create(actor="system", user=alice)
    _, second_secret = api_token_create(actor="system", user=alice)
    api_token_revoke(actor=alice, token=first)
    assert call(first_secret) == 401
    assert call(second_secret) == 200


def test_last_use_is_recorded_and_shown_in_the_admin(alice, admin_user):
    token, secret = api_token_create(actor="system", user=alice, name="nightly export")
    assert token.last_used_at is None
    call(secret)
    token.refresh_from_db()
    assert token.last_used_at is not None
    admin = Client()
    admin.force_login(admin_user)
    html = admin.get("/admin/security/apitoken/").content.decode()
    assert token.prefix in html and "Last used at" in html and "nightly export" in html


def test_the_admin_revokes_a_token(alice, admin_user):
    token, secret = api_token_create(actor="system", user=alice)
    admin = Client()
    admin.force_login(admin_user)
    admin.post("/admin/security/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert call(secret) == 401


def test_a_drf_token_made_before_the_move_keeps_working(alice):
    key = "0123456789abcdef0123456789abcdef01234567"
    Token.objects.create(user=alice, key=key)
    migration = importlib.import_module("casework.security.migrations.0002_move_drf_tokens")
    migration.forwards(apps, None)
    assert not Token.objects.exists()
    moved = ApiToken.objects.get(user=alice)
    assert moved.prefix == key[:8] and key not in moved.digest
    assert call(key) == 200
