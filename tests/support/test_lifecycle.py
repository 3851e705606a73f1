"""The support ticket's declared lifecycle (casework/support/states.py) and the code's guards
over what the models say (casework/support/guards.py): each wrong state of issue 22 and each
guard, fed a model answer that breaks it (offline analysts replaced in the registry)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils.html import escape

from audit.models import AuditEntry
from casework.cases.lifecycle import lifecycle_get
from casework.errors import Conflict
from casework.support.models import Ticket
from casework.support.selectors import sla_clock, support_queue
from casework.support.states import SUPPORT_LIFECYCLE
from tests.support.conftest import send, triage_run, with_address

pytestmark = pytest.mark.django_db(transaction=True)


def _replace(monkeypatch, agent_id: str, change):
    """The offline analyst `agent_id`, its final answer changed by `change(out)` (tool calls pass)."""
    from agents.llm.offline_registry import OFFLINE_ANALYSTS

    original = OFFLINE_ANALYSTS[agent_id]

    def model(data, messages=None):
        out = original(data, messages)
        if isinstance(out, dict):
            change(out)
        return out

    monkeypatch.setitem(OFFLINE_ANALYSTS, agent_id, model)


def _fail(monkeypatch, agent_id: str):
    from agents.llm import errors
    from agents.llm.offline_registry import OFFLINE_ANALYSTS

    def broken(data, messages=None):
        raise errors.AuthenticationError("model unavailable")

    monkeypatch.setitem(OFFLINE_ANALYSTS, agent_id, broken)


def _fresh(ticket) -> Ticket:
    return Ticket.objects.select_related("case", "customer").get(pk=ticket.pk)


def test_the_ticket_lifecycle_is_registered_and_drawn(alice_client):
    assert lifecycle_get("support_ticket") is SUPPORT_LIFECYCLE
    page = alice_client.get("/lifecycles/").content.decode()
    assert 'id="lifecycle-support_ticket"' in page
    for state in SUPPORT_LIFECYCLE.states:
        assert f'id="state-support_ticket-{state.key}"' in page and escape(state.label) in page


# --- the wrong states of issue 22 ------------------------------------------------------------

def test_an_auto_sent_ticket_cannot_be_answered_twice(api, alice, alice_client, support_data, settings):
    from casework.support.services import ticket_reply

    settings.SUPPORT_AUTO_SEND = True
    with_address("CUST-003")  # nothing is auto-sent to a customer with no address (issue 43)
    _, ticket = send(alice, "CUST-003", "How do I download an invoice?")
    ticket = _fresh(ticket)
    assert ticket.lifecycle == "replied" and ticket.case.status == "awaiting_response" and not ticket.case.is_closed
    assert ticket.first_response_at and ticket.completed_at
    with pytest.raises(Conflict, match="already answered by the system") as refused:
        ticket_reply(actor=alice, ticket=ticket, body="A second answer")
    assert refused.value.code == "already_replied"
    response = api.post(f"/api/support/tickets/{ticket.ticket_id}/reply/", {"body": "Again"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "already_replied"
    assert ticket.messages.filter(direction="agent").count() == 1
    # The page offers no second reply: a person confirms the sent one, and that closes the case.
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert 'id="support-reply"' not in page and 'id="support-confirm-form"' in page
    closed = api.post(f"/api/cases/{ticket.case.reference}/close/",
                      {"outcome": "replied", "reason": "The automatic reply answers it."}, format="json")
    assert closed.status_code == 201, closed.content
    ticket = _fresh(ticket)
    assert ticket.case.is_closed and ticket.lifecycle == "replied"


@pytest.mark.parametrize("path", ["/api/cases/{ref}/close/", "/cases/{ref}/close/"])
def test_the_generic_close_refuses_replied_without_a_reply(api, alice_client, alice, support_data, path):
    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    url = path.format(ref=ticket.case.reference)
    client = api if url.startswith("/api/") else alice_client
    response = client.post(url, {"outcome": "replied", "reason": "Answered"},
                           **({"format": "json"} if client is api else {}))
    assert response.status_code == 400
    if client is api:
        assert "No reply was sent" in response.json()["outcome"][0]
    else:
        assert "No reply was sent" in response.content.decode()
    ticket = _fresh(ticket)
    assert not ticket.case.is_closed and ticket.lifecycle == "routed"
    assert not AuditEntry.objects.filter(case_id=ticket.case_id, action="case.closed").exists()


@pytest.mark.parametrize("outcome", ["no_action", "escalated"])
def test_the_generic_close_with_another_outcome_closes_the_ticket_without_a_reply(api, alice, support_data, outcome):
    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    response = api.post(f"/api/cases/{ticket.case.reference}/close/", {"outcome": outcome, "reason": "By phone."},
                        format="json")
    assert response.status_code == 201, response.content
    ticket = _fresh(ticket)
    assert ticket.case.is_closed and ticket.lifecycle == "closed_no_reply" and ticket.completed_at
    move = AuditEntry.objects.get(case_id=ticket.case_id, action="support.state_changed", data__to="closed_no_reply")
    assert move.actor == "alice" and move.data["from"] == "routed" and move.data["by"] == "person"
    assert ticket not in support_queue(alice)


def test_a_person_escalating_closes_the_ticket_without_a_reply(alice, support_data):
    from casework.support.services import ticket_escalate

    _, ticket = send(alice, "CUST-003", "Someone hacked my account and changed my password!")
    assert _fresh(ticket).lifecycle == "escalated"
    ticket_escalate(actor=alice, ticket=ticket, reason="Security team takes it.")
    ticket = _fresh(ticket)
    assert ticket.lifecycle == "closed_no_reply" and ticket.case.decisions.get().outcome == "escalated"


def test_the_sla_clock_stops_when_a_ticket_is_closed_without_a_reply(alice, support_data, settings):
    from casework.support.services import ticket_close_no_action

    settings.SUPPORT_SLA = {"free": {"first_response_minutes": 60, "resolution_hours": 24},
                            "pro": {"first_response_minutes": 30, "resolution_hours": 8},
                            "enterprise": {"first_response_minutes": 15, "resolution_hours": 4}}
    # Two pro tickets (first response due in 30 minutes), both closed without a reply: one 10
    # minutes after it came in, one 45 minutes after.
    _, in_time = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    _, late = send(alice, "CUST-002", "Someone hacked my account and changed my password!")
    assert in_time.pk != late.pk
    for ticket, minutes in ((in_time, 10), (late, 45)):
        Ticket.objects.filter(pk=ticket.pk).update(created_at=ticket.created_at - timedelta(minutes=minutes))
        ticket_close_no_action(actor=alice, ticket=_fresh(ticket), reason="The customer solved it themselves.")
    # Days later, with no first response ever sent: each clock stopped at its close.
    for ticket, breached in ((in_time, False), (late, True)):
        ticket = _fresh(ticket)
        clock = sla_clock(ticket, now=ticket.case.closed_at + timedelta(days=3))
        assert clock.next_due is None and clock.minutes_left is None and not clock.breached
        assert clock.next_label == "closed without a reply"
        assert clock.first_response_breached is breached, ticket.ticket_id


def test_a_failed_supervisor_leaves_the_urgency_high_not_medium(alice, support_data, monkeypatch):
    _, high = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")  # pro + disruption
    _fail(monkeypatch, "support_supervisor")
    _, ticket = send(alice, "CUST-002", "How do I change my profile name?")  # no row of the table
    ticket = _fresh(ticket)
    assert ticket.lifecycle == "triage_failed"
    assert ticket.urgency == "high" and ticket.case.priority == "high"
    assert ticket.triage["result"]["urgency"] == "high"
    queue = list(support_queue(alice))
    assert queue.index(_fresh(high)) < queue.index(ticket)  # beside the high tickets, oldest first
    guard = AuditEntry.objects.get(case_id=ticket.case_id, action="support.guard_applied")
    assert guard.data | {} == {**guard.data, "rule": "urgency_unknown", "proposed": "", "decided": "high"}
    assert any("Urgency unknown → high" in g for g in ticket.triage["guards"])


def test_a_triage_that_raises_leaves_the_ticket_in_the_queue_as_failed(alice, alice_client, support_data,
                                                                      monkeypatch):
    import casework.support.agents.pipeline as pipeline

    def broken(ctx):
        raise RuntimeError("the summary could not be built")

    monkeypatch.setattr(pipeline, "triage_summary", broken)
    _, ticket = send(alice, "CUST-003", "How do I download an invoice?")
    assert triage_run(ticket).status == "failed"
    ticket = _fresh(ticket)
    assert ticket.lifecycle == "triage_failed" and ticket.case.status == "in_progress"
    assert ticket in support_queue(alice) and ticket in support_queue(alice, states=("triage_failed",))
    assert ticket.urgency == "high" and ticket.recommended_action == "route_specialist"
    assert "the summary could not be built" in ticket.triage["failures"][0]["error"]
    move = AuditEntry.objects.get(case_id=ticket.case_id, action="support.state_changed", data__to="triage_failed")
    assert move.actor == "system" and move.data["from"] == "received"
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "Triage failed" in page and "the summary could not be built" in page
    # The dashboard's agreement counts no recommendation from a triage that failed.
    from casework.support.recommendation import RECOMMENDATION

    assert not RECOMMENDATION.records(ticket.case_id).exists()
    # Still the seed's activated ticket: a follow-up joins it and is triaged again.
    monkeypatch.undo()
    run, again = send(alice, "CUST-003", "How do I download an invoice? Still waiting.")
    assert again.pk == ticket.pk and _fresh(ticket).lifecycle != "triage_failed"


# --- the guards ---------------------------------------------------------------------------

@pytest.mark.parametrize("auto_send", [True, False])
def test_a_vip_ticket_is_never_auto_sent_whatever_the_model_says(alice, alice_client, support_data, monkeypatch,
                                                                settings, auto_send):
    settings.SUPPORT_AUTO_SEND = auto_send
    _replace(monkeypatch, "support_billing",
             lambda out: out.update(recommended_action="auto_respond", reasoning="Simple question, answered."))
    _, ticket = send(alice, "CUST-004", "How do I download an invoice?")  # Vera Vip
    ticket = _fresh(ticket)
    assert triage_run(ticket).results["billing"]["output"]["recommended_action"] == "auto_respond"
    assert ticket.recommended_action == "escalate_human" and ticket.lifecycle == "escalated"
    assert not ticket.messages.filter(direction="agent").exists()
    guard = AuditEntry.objects.get(case_id=ticket.case_id, action="support.guard_applied")
    assert guard.data["rule"] == "vip_never_auto_sent" and "CUST-004 is a VIP" in guard.data["reason"]
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "CUST-004 is a VIP" in page


def test_auto_send_refuses_a_vip_ticket_even_with_a_drafted_answer(alice, support_data, settings):
    from casework.support.services import customer_save, ticket_auto_send

    settings.SUPPORT_AUTO_SEND = False
    _, ticket = send(alice, "CUST-003", "How do I download an invoice?")
    assert _fresh(ticket).lifecycle == "answer_ready"
    customer_save(actor="system", data={"customer_id": "CUST-003", "vip": True})  # flagged after the triage
    assert ticket_auto_send(actor="system", ticket=ticket) is None
    ticket = _fresh(ticket)
    assert ticket.lifecycle == "answer_ready" and not ticket.messages.filter(direction="agent").exists()
    assert AuditEntry.objects.filter(case_id=ticket.case_id, action="support.guard_applied",
                                     data__rule="vip_never_auto_sent").exists()


def test_the_urgency_table_is_a_floor_under_the_models_urgency(alice, alice_client, support_data, monkeypatch):
    def low(out):
        out.update(urgency="low", requires_escalation=False) if "requires_escalation" in out else out.update(
            urgency="low")

    _replace(monkeypatch, "support_supervisor", low)
    _replace(monkeypatch, "support_technical", low)
    _, ticket = send(alice, "CUST-001", "Our production is down and we lost data for all users.")
    ticket = _fresh(ticket)
    assert triage_run(ticket).results["supervisor"]["output"]["urgency"] == "low"
    assert ticket.urgency == "critical" and ticket.case.priority == "critical"
    guard = AuditEntry.objects.get(case_id=ticket.case_id, action="support.guard_applied")
    assert guard.data | {} == {**guard.data, "rule": "urgency_floor", "proposed": "low", "decided": "critical"}
    assert "Enterprise + outage/data loss" in guard.data["reason"]
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "Enterprise + outage/data loss" in page


def test_the_floor_never_lowers_a_model_that_ranks_higher(alice, support_data, monkeypatch):
    _replace(monkeypatch, "support_supervisor", lambda out: out.update(urgency="critical"))
    _replace(monkeypatch, "support_general", lambda out: out.update(urgency="critical"))
    _, ticket = send(alice, "CUST-003", "How do I change my profile name?")  # free + question: low
    ticket = _fresh(ticket)
    assert ticket.urgency == "critical"
    assert not AuditEntry.objects.filter(case_id=ticket.case_id, action="support.guard_applied").exists()


def test_a_re_triage_keeps_the_priority_a_person_set(alice, support_data):
    """Issue 43: the triage set the case's priority from its urgency even when a person had set it."""
    from casework.cases.services import case_set_priority

    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    assert _fresh(ticket).case.priority == "high"  # pro + service disruption
    case_set_priority(actor=alice, case=ticket.case, priority="low", reason="A workaround is in place.")
    send(alice, "CUST-002", f"About {ticket.ticket_id}: the CSV export still fails with the same error.")
    ticket = _fresh(ticket)
    assert triage_run(ticket).state["input_thread"][-1]["text"].startswith("About")  # re-triaged
    assert ticket.urgency == "high" and ticket.case.priority == "low"
    kept = AuditEntry.objects.get(case_id=ticket.case_id, action="support.guard_applied",
                                  data__rule="person_priority_stands")
    assert (kept.data["proposed"], kept.data["decided"]) == ("high", "low")
    assert "alice set the priority to low" in kept.data["reason"]


@pytest.mark.parametrize(("customer", "message", "rule", "why"), [
    pytest.param("CUST-004", "How do I download an invoice?", "escalate_vip", "CUST-004 is a VIP", id="vip"),
    pytest.param("CUST-002", "I think someone accessed our account without permission, please check.",
                 "escalate_sensitive", "security", id="security"),
    pytest.param("CUST-003", "Under the GDPR I want all my personal data deleted, or my lawyer will act.",
                 "escalate_sensitive", "legal or privacy", id="legal-privacy"),
])
def test_a_vip_security_or_legal_ticket_goes_to_a_person_whatever_the_model_says(
        alice, support_data, monkeypatch, customer, message, rule, why):
    """Seed 001: escalate_human for a VIP customer or a sensitive matter; before issue 43 only
    an auto-answer to a VIP was corrected, and a model routing these to a specialist stood."""
    def routes(out):
        if "requires_escalation" in out:
            out.update(requires_escalation=False, ticket_type="general")
        else:
            out.update(recommended_action="route_specialist")

    _replace(monkeypatch, "support_supervisor", routes)
    _replace(monkeypatch, "support_general", routes)
    _, ticket = send(alice, customer, message)
    ticket = _fresh(ticket)
    assert triage_run(ticket).results["general"]["output"]["recommended_action"] == "route_specialist"
    assert ticket.recommended_action == "escalate_human" and ticket.lifecycle == "escalated"
    guard = AuditEntry.objects.get(case_id=ticket.case_id, action="support.guard_applied", data__rule=rule)
    assert (guard.data["proposed"], guard.data["decided"]) == ("route_specialist", "escalate_human")
    assert why in guard.data["reason"]
    assert any(why in g for g in ticket.triage["guards"])


def test_an_auto_answer_stands_only_for_a_simple_question(alice, support_data, monkeypatch):
    """Seed 001: auto_respond is for a simple question with a clear article; a model drafting
    an automatic answer to a broken export is corrected."""
    _replace(monkeypatch, "support_technical", lambda out: out.update(recommended_action="auto_respond"))
    _, ticket = send(alice, "CUST-003", "I cannot log in, the login page fails with an error.")
    ticket = _fresh(ticket)
    assert triage_run(ticket).results["technical"]["output"]["recommended_action"] == "auto_respond"
    assert ticket.triage["result"]["relevant_articles"]  # an article was found: only the rule stops it
    assert ticket.recommended_action == "route_specialist" and ticket.lifecycle == "routed"
    guard = AuditEntry.objects.get(case_id=ticket.case_id, action="support.guard_applied",
                                   data__rule="auto_respond_simple_question_only")
    assert guard.data["decided"] == "route_specialist"


def test_a_pro_customer_whose_crashes_stop_the_team_is_high_whatever_the_model_says(alice, support_data,
                                                                                     monkeypatch):
    """Seed 001: Pro + service disruption is HIGH; a crash that stops a team's work was read as a
    general question of medium urgency."""
    def general_medium(out):
        out.update(urgency="medium")
        if "requires_escalation" in out:
            out.update(ticket_type="general")

    _replace(monkeypatch, "support_supervisor", general_medium)
    _replace(monkeypatch, "support_general", general_medium)
    _replace(monkeypatch, "support_technical", general_medium)
    _, ticket = send(alice, "CUST-002", "Since yesterday's update the desktop app keeps crashing when we open "
                                        "a project, and my whole team can't work.")
    ticket = _fresh(ticket)
    assert ticket.urgency == "high" and ticket.case.priority == "high"
    guard = AuditEntry.objects.get(case_id=ticket.case_id, action="support.guard_applied", data__rule="urgency_floor")
    assert "Pro + service disruption" in guard.data["reason"]


@pytest.mark.long(seconds=20)
@pytest.mark.django_db(transaction=True)
def test_the_migration_maps_old_tickets_by_what_happened(alice, support_data, settings):
    """0004: `completed` was a drafted answer, an escalation, a sent reply or a close; `active`
    was routed (or failed)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from casework.support.services import ticket_close_no_action

    settings.SUPPORT_AUTO_SEND = False
    _, drafted = send(alice, "CUST-003", "How do I download an invoice?")
    _, escalated = send(alice, "CUST-003", "Someone hacked my account!")
    _, routed = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    _, closed = send(alice, "CUST-001", "We were charged twice for the March invoice.")
    ticket_close_no_action(actor=alice, ticket=closed, reason="Duplicate.")
    executor = MigrationExecutor(connection)
    executor.migrate([("support", "0003_message_intake")])
    old = MigrationExecutor(connection).loader.project_state([("support", "0003_message_intake")]).apps
    OldTicket = old.get_model("support", "Ticket")
    assert OldTicket.objects.get(pk=drafted.pk).lifecycle == "completed"
    OldTicket.objects.filter(pk=routed.pk).update(lifecycle="active")
    OldTicket.objects.filter(pk__in=[drafted.pk, escalated.pk, closed.pk]).update(lifecycle="completed")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    states = dict(Ticket.objects.values_list("pk", "lifecycle"))
    assert [states[t.pk] for t in (drafted, escalated, routed, closed)] == [
        "answer_ready", "escalated", "routed", "closed_no_reply"]
