"""Operations: /healthz, /metrics, and production settings (check --deploy, SECRET_KEY)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from casework.cases.services import case_create

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE_BROKER = "redis://127.0.0.1:1/0"


@pytest.fixture
def unreachable_broker(monkeypatch):
    from casework.celery import app

    # Configuration first: patching reads the value to restore, which the variable below would mask.
    monkeypatch.setattr(app.conf, "broker_url", UNREACHABLE_BROKER)
    # Celery lets the CELERY_BROKER_URL environment variable win over its configuration.
    monkeypatch.setenv("CELERY_BROKER_URL", UNREACHABLE_BROKER)


# --- /healthz ----------------------------------------------------------------------------

@pytest.mark.django_db
def test_healthz_answers_200_when_database_and_broker_answer(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok", "llm": "ok: offline provider"}}


@pytest.mark.django_db
def test_healthz_answers_503_naming_an_unreachable_broker(client, unreachable_broker):
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["broker"].startswith("failing:")
    assert "127.0.0.1:1" in body["checks"]["broker"]


@pytest.mark.django_db
def test_healthz_answers_503_naming_a_failing_database(client, monkeypatch):
    from django.db.backends.utils import CursorWrapper

    def refuse(self, sql, params=None):
        raise RuntimeError("database is down")

    monkeypatch.setattr(CursorWrapper, "execute", refuse)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == "failing: RuntimeError: database is down"
    assert response.json()["checks"]["broker"] == "ok"


@pytest.mark.django_db
def test_healthz_needs_no_login_and_no_https_redirect(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz").status_code == 200
    assert client.get("/metrics").status_code == 200
    assert client.get("/cases/").status_code == 301


# --- /metrics ----------------------------------------------------------------------------

@pytest.mark.django_db
def test_metrics_are_prometheus_text_with_latency_and_case_counts(client, alice_client, alice):
    case_create(actor=alice, case_type="fraud_alert", title="One")
    case_create(actor=alice, case_type="fraud_alert", title="Two")
    alice_client.get("/cases/")

    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert "# TYPE casework_http_request_duration_seconds histogram" in text
    assert 'casework_http_request_duration_seconds_count{method="GET",route="cases/",status="200"}' in text
    assert 'casework_cases{case_type="fraud_alert",status="new"} 2.0' in text
    assert "# TYPE casework_celery_tasks_total counter" in text


# --- production settings -----------------------------------------------------------------

def _django(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """Run manage.py in a fresh process with only the given settings in its environment (and the
    test run's field encryption key, unless `env` sets FIELD_ENCRYPTION_KEYS)."""
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "DATABASE_URL", "FIELD_ENCRYPTION_KEYS")
            if k in os.environ}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env={**base, "VAR_DIR": str(tmp_path), **env},
        capture_output=True, text=True, timeout=60,
    )


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    result = _django(
        ["check", "--deploy", "--fail-level", "WARNING"], tmp_path,
        SECRET_KEY=secrets.token_urlsafe(50), HTTPS="true", ALLOWED_HOSTS="casework.example.com",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_without_a_secret_key_and_debug_django_refuses_to_start(tmp_path):
    result = _django(["check"], tmp_path)
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set" in result.stderr


def test_without_field_encryption_keys_and_debug_django_refuses_to_start(tmp_path):
    result = _django(["check"], tmp_path, SECRET_KEY=secrets.token_urlsafe(50), FIELD_ENCRYPTION_KEYS="")
    assert result.returncode != 0
    assert "ImproperlyConfigured: FIELD_ENCRYPTION_KEYS is not set" in result.stderr


def test_a_bad_field_encryption_key_is_refused_without_being_quoted(tmp_path):
    result = _django(["check"], tmp_path, SECRET_KEY=secrets.token_urlsafe(50),
                     FIELD_ENCRYPTION_KEYS="c2hvcnQ=,not-a-key-but-a-secret")
    assert result.returncode != 0
    assert "FIELD_ENCRYPTION_KEYS: key 1 is not a Fernet key" in result.stderr
    assert "not-a-key-but-a-secret" not in result.stderr
