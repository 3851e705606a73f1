"""A web request that meets a dropped database connection (a restart, a failover) is never a
500 with half a write (issue 26): a safe request is run again once; a write is answered 503
with Retry-After, its transaction rolled back, and succeeds when sent again.

The restart is pg_terminate_backend from a second connection (tests/fakes/db_restart.py);
Django's test client skips the connection health check a real request starts with
(CONN_HEALTH_CHECKS), so the request meets the dead connection, as one does mid-request."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from casework.cases.models import Comment
from casework.cases.services import case_create
from casework.db_transient import RETRY_AFTER_SECONDS
from casework.fraud.models import Alert
from tests.fakes.db_restart import on_postgres, terminate_other_backends
from tests.fraud.conftest import CYCLING

pytestmark = [pytest.mark.django_db(transaction=True), on_postgres]


def restart_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")  # the test's own connection is open, and about to die
    assert terminate_other_backends() >= 1


def test_a_write_meeting_a_dropped_connection_is_a_503_with_retry_after_and_writes_nothing(api):
    restart_database()

    response = api.post("/api/fraud/alerts/", CYCLING, format="json")

    assert response.status_code == 503, response.content
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert response.json()["code"] == "database_unavailable"
    assert not Alert.objects.exists()
    again = api.post("/api/fraud/alerts/", CYCLING, format="json")  # the client does as told
    assert again.status_code == 201 and Alert.objects.count() == 1


def test_a_read_meeting_a_dropped_connection_is_run_again(api, alice, caplog):
    case = case_create(actor=alice, case_type="fraud_alert", title="Card testing")
    restart_database()

    with caplog.at_level("WARNING", logger="casework.db_transient"):
        response = api.get("/api/cases/")

    assert response.status_code == 200, response.content
    assert [c["reference"] for c in response.json()["results"]] == [case.reference]  # the second run's answer
    # The first run met the dead connection; the middleware ran the request again, once.
    messages = [r.getMessage() for r in caplog.records if r.name == "casework.db_transient"]
    assert any(m.startswith("GET /api/cases/: transient database error") for m in messages), messages
    assert messages.count("GET /api/cases/ met a transient database error; running it again.") == 1


def test_a_page_form_meeting_a_dropped_connection_says_so_in_a_503_page(alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Card testing")
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    restart_database()

    response = client.post(f"/cases/{case.reference}/comments/", {"body": "Called the cardholder."})

    assert response.status_code == 503 and response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert "Nothing was saved" in response.content.decode()
    assert not Comment.objects.exists()
    again = client.post(f"/cases/{case.reference}/comments/", {"body": "Called the cardholder."})
    assert again.status_code in (200, 302) and Comment.objects.count() == 1
