"""The seed's rules as the offline analysts apply them: the urgency table row by row,
routing by category, matching, language detection."""

from __future__ import annotations

import pytest

from agents.llm.base import Message
from agents.runtime.prompting import fence_data
from casework.support.agents import offline, rules


def _supervisor(plan: str, message: str, vip: bool = False) -> dict:
    lookup = {"customer_id": "C", "plan": plan, "tenure_months": 3, "seats": 2, "region": "eu", "vip": vip}
    tool = Message(role="tool", content=fence_data(lookup, label="tool-result:customer_lookup"),
                   tool_call_id="t1", name="customer_lookup")
    return offline.supervisor({"customer_id": "C", "messages": [message]}, [tool])


@pytest.mark.parametrize(("plan", "message", "urgency", "escalate"), [
    pytest.param("free", "I think my account was hacked, someone changed my email", "critical", True,
                 id="any-plan+security"),
    pytest.param("enterprise", "Production is down for all users since 9am", "critical", True,
                 id="enterprise+outage"),
    pytest.param("enterprise", "We lost all our project data after the update, data loss!", "critical", True,
                 id="enterprise+data-loss"),
    pytest.param("enterprise", "We were charged twice for the March invoice", "high", False,
                 id="enterprise+billing-error"),
    pytest.param("pro", "The export stopped working this morning", "high", False, id="pro+service-disruption"),
    pytest.param("pro", "The app keeps crashing on startup and my whole team can't work", "high", False,
                 id="pro+crashes-stopping-the-team"),
    pytest.param("pro", "Every upload crashed twice today; we are blocked", "high", False,
                 id="pro+crashed-blocked"),
    pytest.param("free", "How do I change my profile name?", "low", False, id="free+general-question"),
    pytest.param("pro", "How do I change my profile name?", "medium", False, id="unlisted-is-medium"),
    pytest.param("free", "We were charged twice this month", "medium", False, id="free+billing-error-unlisted"),
    pytest.param("enterprise", "Suspicious login and we were charged twice", "critical", True,
                 id="security-comes-first"),
])
def test_the_urgency_table_row_by_row(plan, message, urgency, escalate):
    decision = _supervisor(plan, message)
    assert decision["urgency"] == urgency
    assert decision["requires_escalation"] is escalate


def test_the_supervisor_asks_customer_lookup_first():
    (call,) = offline.supervisor({"customer_id": "CUST-9", "messages": ["hi"]}, [])
    assert call["name"] == "customer_lookup" and call["arguments"] == {"customer_id": "CUST-9"}


@pytest.mark.parametrize(("message", "ticket_type"), [
    ("I need a refund for my subscription", "billing"),
    ("The API returns a 500 error on every call", "technical"),
    ("Do you have an office in Berlin?", "general"),
    ("Me cobraron dos veces la factura", "billing"),
])
def test_routing_by_category(message, ticket_type):
    assert rules.ticket_type_for(rules.keyword_classes(message)) == ticket_type


@pytest.mark.parametrize(("text", "language"), [
    ("Hello, I cannot find my invoice for March", "en"),
    ("Hola, no encuentro mi factura de marzo", "es"),
    ("Bonjour, je ne trouve pas ma facture de mars", "fr"),
    ("Hallo, ich finde meine Rechnung für März nicht", "de"),
    ("ฉันหาใบแจ้งหนี้เดือนมีนาคมไม่เจอ", "th"),
    ("ok", "en"),
])
def test_the_translator_detects_the_language_and_cannot_translate(text, language):
    out = offline.translator({"messages": [text]})
    assert out["original_language"] == language
    assert out["is_english"] is (language == "en")
    assert out["original_messages"] == [text]
    assert out["translated_messages"] == ([text] if language == "en" else [])


def test_the_matcher_prefers_a_quoted_ticket_id_and_otherwise_shared_words():
    tickets = [{"ticket_id": "TKT-AAAA1111", "summary": "The export to CSV fails with an error", "ticket_type": "technical"},
               {"ticket_id": "TKT-BBBB2222", "summary": "Charged twice for the March invoice", "ticket_type": "billing"}]
    quoted = offline.ticket_matcher({"new_message": "About tkt-bbbb2222: any news?", "activated_tickets": tickets})
    assert quoted == {"matched_ticket_id": "TKT-BBBB2222", "confidence": "high"}
    similar = offline.ticket_matcher({"new_message": "The CSV export still fails with the same error",
                                      "activated_tickets": tickets})
    assert similar["matched_ticket_id"] == "TKT-AAAA1111" and similar["confidence"] in ("high", "medium")
    unrelated = offline.ticket_matcher({"new_message": "Do you have an office in Berlin?", "activated_tickets": tickets})
    assert unrelated == {"matched_ticket_id": None, "confidence": "low"}
