""""Did this answer your question?" (issue 25.5): the signed link under a sent reply, the public
one-click page (GET shows, POST records; CSRF-checked), "not solved" reopening the ticket to a
person through its lifecycle, and the auto-answer resolution rate on the dashboard."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client

from audit.models import AuditEntry
from casework.cases.models import Case, Decision
from casework.support.dashboard import auto_answer_resolution
from casework.support.feedback import feedback_check
from casework.support.models import Ticket, TicketFeedback, TicketMessage
from tests.support.conftest import send, with_address

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _customers_with_addresses(support_data):
    # A reply is sent, and a case replied, only once the mail server accepted its email (issue 43).
    with_address("CUST-002")
    with_address("CUST-003")

INVOICE = "How do I download an invoice?"


def _auto_answered(alice, settings, customer="CUST-003", text=INVOICE):
    settings.SUPPORT_AUTO_SEND = True
    _, ticket = send(alice, customer, text)
    ticket = Ticket.objects.select_related("case").get(pk=ticket.pk)
    assert ticket.lifecycle == "replied", ticket.triage
    return ticket, ticket.messages.get(direction="agent")


def _path(message: TicketMessage) -> str:
    match = re.search(r"https?://[^/]+(/support/feedback/[^/\s]+/)", message.text)
    assert match, message.text
    return match.group(1)


def test_an_auto_answer_carries_the_link_and_get_changes_nothing(alice, support_data, settings):
    ticket, reply = _auto_answered(alice, settings)
    assert "Did this answer your question?" in reply.text
    page = Client().get(_path(reply))  # no login
    assert page.status_code == 200
    assert b'id="feedback-solved"' in page.content and b'id="feedback-not-solved"' in page.content
    assert b"csrfmiddlewaretoken" in page.content
    assert not TicketFeedback.objects.exists()


def test_solved_is_recorded_and_the_ticket_stays_answered(alice, support_data, settings):
    ticket, reply = _auto_answered(alice, settings)
    response = Client().post(_path(reply), {"answer": "solved"})
    assert response.status_code == 200 and b'data-solved="true"' in response.content
    feedback = TicketFeedback.objects.get()
    assert (feedback.solved, feedback.auto_sent, feedback.category, feedback.article_id) == (True, True, "billing",
                                                                                              "kb_002")
    ticket.refresh_from_db()
    assert ticket.lifecycle == "replied"
    entry = AuditEntry.objects.get(action="support.feedback_solved")
    assert entry.actor == "customer:CUST-003 via feedback link" and entry.data["article_id"] == "kb_002"
    # One answer per reply: a second is refused and changes nothing.
    again = Client().post(_path(reply), {"answer": "not_solved"})
    assert again.status_code == 409 and b"already" in again.content
    assert TicketFeedback.objects.count() == 1 and Ticket.objects.get(pk=ticket.pk).lifecycle == "replied"


def test_not_solved_on_an_auto_answer_reopens_the_ticket_to_a_person(alice, support_data, settings):
    ticket, reply = _auto_answered(alice, settings)
    response = Client().post(_path(reply), {"answer": "not_solved"})
    assert response.status_code == 200 and b"back with a person" in response.content
    ticket = Ticket.objects.select_related("case").get(pk=ticket.pk)
    assert ticket.lifecycle == "reopened" and ticket.case.status == "in_progress"
    move = AuditEntry.objects.filter(action="support.state_changed", case_id=ticket.case_id).latest("id")
    assert move.actor == "customer:CUST-003 via feedback link" and move.data["from"] == "replied"
    from casework.support.selectors import support_queue
    from casework.support.states import WAITING

    assert ticket in list(support_queue(alice, states=WAITING))


def test_not_solved_on_a_persons_reply_reopens_the_closed_case(alice, support_data):
    from casework.support.services import ticket_reply

    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    reply = ticket_reply(actor=alice, ticket=ticket, body="We fixed the export; please try again.")
    assert Case.objects.get(pk=ticket.case_id).is_closed
    assert Client().post(_path(reply), {"answer": "not_solved"}).status_code == 200
    ticket = Ticket.objects.select_related("case").get(pk=ticket.pk)
    assert ticket.lifecycle == "reopened" and not ticket.case.is_closed and ticket.case.status == "in_progress"
    decision = Decision.objects.get(case=ticket.case)
    assert decision.final is False and "superseded" in decision.data
    assert AuditEntry.objects.filter(action="case.reopened", case_id=ticket.case_id).exists()
    # The person answers again: the case closes with a new decision.
    ticket_reply(actor=alice, ticket=ticket, body="Now it really works: we replaced the exporter.")
    assert Ticket.objects.get(pk=ticket.pk).lifecycle == "replied"


def test_a_tampered_link_is_refused_and_changes_nothing(alice, support_data, settings):
    ticket, reply = _auto_answered(alice, settings)
    path = _path(reply)
    token = path.rstrip("/").rsplit("/", 1)[1]
    tampered = path.replace(token, token[:-3] + ("AAA" if token[-3:] != "AAA" else "BBB"))
    assert Client().get(tampered).status_code == 400
    response = Client().post(tampered, {"answer": "not_solved"})
    assert response.status_code == 400 and b"not valid" in response.content
    # A well-formed token for a message that is not a reply (the customer's own) is refused too.
    from casework.support.feedback import feedback_token

    customer_message = ticket.messages.get(direction="customer")
    assert Client().get(f"/support/feedback/{feedback_token(ticket, customer_message)}/").status_code == 400
    assert not TicketFeedback.objects.exists() and Ticket.objects.get(pk=ticket.pk).lifecycle == "replied"


def test_an_expired_link_is_refused(alice, support_data, settings):
    settings.SUPPORT_FEEDBACK_LINK_DAYS = 10
    ticket, reply = _auto_answered(alice, settings)
    token = _path(reply).rstrip("/").rsplit("/", 1)[1]
    assert feedback_check(token, now=reply.created_at + timedelta(days=10)).state == "ok"
    assert feedback_check(token, now=reply.created_at + timedelta(days=10, seconds=1)).state == "expired"
    # Over HTTP: the reply was sent 11 days ago.
    TicketMessage.objects.filter(pk=reply.pk).update(created_at=reply.created_at - timedelta(days=11))
    response = Client().post(_path(reply), {"answer": "not_solved"})
    assert response.status_code == 410 and b"expired" in response.content
    assert not TicketFeedback.objects.exists() and Ticket.objects.get(pk=ticket.pk).lifecycle == "replied"


def test_a_bad_answer_is_400_naming_it_and_a_post_without_csrf_is_refused(alice, support_data, settings):
    ticket, reply = _auto_answered(alice, settings)
    response = Client().post(_path(reply), {"answer": "maybe"})
    assert response.status_code == 400 and b"answer" in response.content
    assert Client(enforce_csrf_checks=True).post(_path(reply), {"answer": "solved"}).status_code == 403
    assert not TicketFeedback.objects.exists()


def test_the_dashboard_shows_the_resolution_rate_per_category_and_article(alice, alice_client, support_data,
                                                                          settings):
    from casework.support.services import ticket_reply

    answers = []
    for _ in range(3):
        _, reply = _auto_answered(alice, settings)
        answers.append(reply)
    for reply, answer in zip(answers, ["solved", "solved", "not_solved"], strict=True):
        assert Client().post(_path(reply), {"answer": answer}).status_code == 200
    # A person's reply rejected: not an auto-answer, not in the rate.
    _, routed = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    person = ticket_reply(actor=alice, ticket=routed, body="We fixed the export; please try again.")
    assert Client().post(_path(person), {"answer": "not_solved"}).status_code == 200

    figures = auto_answer_resolution()
    assert figures["total"] == {"answered": 3, "solved": 2, "not_solved": 1, "rate": 66.7}
    assert figures["categories"] == [{"key": "billing", "answered": 3, "solved": 2, "not_solved": 1, "rate": 66.7}]
    assert [(a["key"], a["answered"], a["not_solved"], a["title"]) for a in figures["articles"]] == [
        ("kb_002", 3, 1, "How to download an invoice")]
    assert [a["key"] for a in figures["rejected"]] == ["kb_002"]

    page = alice_client.get("/").content.decode()
    assert 'id="support-auto-answers"' in page
    assert "2 of 3 answered auto-replies solved the question: <strong>66.7 %</strong>" in page
    assert re.search(r'id="support-rejected-articles">\s*<li data-key="kb_002">', page)
