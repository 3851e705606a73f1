"""Security headers on every response, /metrics behind METRICS_TOKEN, /healthz naming an LLM
endpoint that does not answer, and the API's throttles answering 429 with Retry-After."""

from __future__ import annotations

import socket

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from casework.ops import llm_check

pytestmark = pytest.mark.django_db


def test_pages_carry_the_security_headers(alice_client):
    response = alice_client.get("/cases/")
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"
    assert "camera=()" in response["Permissions-Policy"]
    assert response["X-Content-Type-Options"] == "nosniff"


def test_metrics_needs_the_bearer_token_when_one_is_set(client, settings):
    settings.METRICS_TOKEN = "s3cret-metrics"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics")
    assert response.status_code == 200 and b"# HELP" in response.content


def test_metrics_is_open_without_a_token_setting(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 200


def test_healthz_is_degraded_when_the_llm_endpoint_does_not_answer(client, settings, monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.LLM_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = f"http://127.0.0.1:{port}/v1"
    monkeypatch.setattr(llm_check, "_cache", {})
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200 and body["status"] == "degraded"
    assert body["checks"]["llm"].startswith(f"degraded: 127.0.0.1:{port} does not answer")


def test_healthz_is_ok_when_the_llm_endpoint_answers(client, settings, monkeypatch):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        settings.LLM_PROVIDER = "openai"
        settings.OPENAI_BASE_URL = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
        monkeypatch.setattr(llm_check, "_cache", {})
        body = client.get("/healthz").json()
    assert body["checks"]["llm"] == "ok" and body["status"] == "ok"


@pytest.fixture
def low_rates(monkeypatch):
    cache.clear()
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "2/min", "user": "3/min",
                                                                "signed_link": "2/min"})
    yield
    cache.clear()


def test_a_caller_guessing_tokens_is_throttled_with_retry_after(low_rates, alice):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Token guessed-0000")
    assert [api.get("/api/cases/").status_code for _ in range(3)] == [401, 401, 429]
    response = api.get("/api/cases/")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0


def test_token_and_session_users_are_throttled_per_user(low_rates, api):
    codes = [api.get("/api/cases/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert int(api.get("/api/cases/")["Retry-After"]) > 0


def test_the_signed_link_endpoint_has_its_own_rate(low_rates):
    api = APIClient()
    codes = [api.post("/api/access/answers/employee/", {}, format="json").status_code for _ in range(3)]
    assert codes == [400, 400, 429]


def test_json_strings_no_column_can_hold_are_a_400_not_a_500(api):
    for text in ('{"account_id": "A\\u0000B"}', '[{"account_id": "\\ud9b5x"}]'):
        response = api.post("/api/fraud/alerts/", text, content_type="application/json")
        assert response.status_code == 400 and response.json()["code"] == "parse_error", text


def test_the_signed_link_page_shares_the_signed_link_rate(low_rates, client):
    codes = [client.get("/access/respond/forged-token/").status_code for _ in range(3)]
    assert codes == [400, 400, 429]  # a forged link is refused, then guessing is throttled
    response = client.get("/access/respond/another-guess/")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert b"Too many requests" in response.content


def test_a_query_string_past_the_limit_is_a_400_naming_its_parameter(alice_client, api, settings):
    settings.QUERY_STRING_MAX_BYTES = 2048
    response = api.get("/api/cases/", {"q": "x" * 5000, "status": "new"})
    assert response.status_code == 400
    assert response.json()["q"] == ["q: too long (5,000 characters); a query string may be at most 2,048 bytes."]
    page = alice_client.get("/cases/", {"q": "y" * 3000})
    assert page.status_code == 400 and b"q: too long (3,000 characters)" in page.content
    # Under the limit, an over-long search is the filter's own 400, naming q too.
    response = api.get("/api/cases/", {"q": "x" * 500})
    assert response.status_code == 400 and "q" in response.json()
