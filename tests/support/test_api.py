"""The support API: a message in, the ticket out, the three decisions, 409 on a second one."""

from __future__ import annotations

import pytest

from audit.models import AuditEntry
from tests.support.conftest import send, with_address

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_message_answers_202_with_its_ticket_and_case(api, support_data):
    response = api.post("/api/support/messages/", {"customer_id": "CUST-001", "channel": "email",
                                                   "message": "We were charged twice for the March invoice."},
                        format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "completed" and body["matched"] is False
    assert body["ticket_id"].startswith("TKT-") and body["reference"].startswith("SUP-")
    assert api.get(body["status_url"]).json()["ticket_id"] == body["ticket_id"]

    ticket = api.get(f"/api/support/tickets/{body['ticket_id']}/").json()
    assert ticket["thread_id"] == f"CUST-001:{body['ticket_id']}"
    assert ticket["channel"] == "email" and ticket["customer"]["plan"] == "enterprise"
    assert [m["direction"] for m in ticket["messages"]] == ["customer"]
    assert ticket["triage"]["result"]["recommended_action"] == "route_specialist"
    assert ticket["triage"]["supervisor"]["ticket_type"] == "billing"


@pytest.mark.parametrize(("payload", "field"), [
    ({"customer_id": "CUST-999", "message": "hi"}, "customer_id"),
    ({"customer_id": "CUST-001", "message": "   "}, "message"),
    ({"message": "hi"}, "customer_id"),
])
def test_a_bad_message_is_refused_by_field(api, support_data, payload, field):
    response = api.post("/api/support/messages/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_reply_sends_closes_and_a_second_send_is_409(api, alice, support_data):
    with_address("CUST-002")
    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    url = f"/api/support/tickets/{ticket.ticket_id}/reply/"
    first = api.post(url, {"body": "We fixed the export; please try again."}, format="json")
    assert first.status_code == 200, first.content
    # The test email backend accepted the email when the reply committed: the case closed as
    # replied then (issue 43: never at the click), with the person's decision.
    body = api.get(f"/api/support/tickets/{ticket.ticket_id}/").json()
    assert body["case_status"] == "closed" and body["decision"]["outcome"] == "replied"
    assert body["lifecycle"] == "replied" and body["first_response_at"]
    assert body["messages"][-1] == {**body["messages"][-1], "direction": "agent", "sent_by": "alice"}
    assert body["messages"][-1]["text"].startswith("We fixed the export; please try again.\n\nDid this answer")
    second = api.post(url, {"body": "Again"}, format="json")
    assert second.status_code == 409 and second.json()["code"] == "already_closed"
    assert AuditEntry.objects.filter(case_id=ticket.case_id, action="support.reply_written").count() == 1


@pytest.mark.parametrize(("action", "outcome"), [("escalate", "escalated"), ("close", "no_action")])
def test_escalate_and_close_record_their_decision(api, alice, support_data, action, outcome):
    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    url = f"/api/support/tickets/{ticket.ticket_id}/{action}/"
    assert api.post(url, {"reason": ""}, format="json").status_code == 400
    response = api.post(url, {"reason": "Handled by phone."}, format="json")
    assert response.status_code == 200
    assert response.json()["decision"]["outcome"] == outcome
    assert api.post(url, {"reason": "again"}, format="json").status_code == 409


def test_the_api_needs_an_investigator(client, mona, support_data):
    assert client.post("/api/support/messages/", {}).status_code in (401, 403)
    client.force_login(mona)
    assert client.get("/api/support/tickets/TKT-AAAAAAAA/").status_code == 403


def test_an_unknown_ticket_is_404(api, support_data):
    assert api.get("/api/support/tickets/TKT-AAAAAAAA/").status_code == 404
    assert api.get("/api/support/intake/999999/").status_code == 404


def test_the_openapi_schema_documents_every_support_operation(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    paths = {p: v for p, v in schema["paths"].items() if p.startswith("/api/support/")}
    assert set(paths) == {"/api/support/messages/", "/api/support/intake/{run_id}/",
                          "/api/support/tickets/{ticket_id}/", "/api/support/tickets/{ticket_id}/reply/",
                          "/api/support/tickets/{ticket_id}/escalate/", "/api/support/tickets/{ticket_id}/close/"}
    assert set(paths["/api/support/messages/"]["post"]["responses"]) >= {"202", "400", "401", "403"}
    assert set(paths["/api/support/tickets/{ticket_id}/reply/"]["post"]["responses"]) >= {"200", "400", "404", "409"}
