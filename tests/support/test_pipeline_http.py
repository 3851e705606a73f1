"""The support pipeline through the real `openai` SDK over HTTP (LLM_PROVIDER=openai), against
the fake OpenAI-compatible server: real tool calls (customer_lookup, kb_search), real schemas.

The fake plays a model that does its job: the supervisor and the specialists first ask for
their tool, then answer from what the tool returned; tests queue other answers per agent.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque

import pytest

from agents.models import AgentCall, AgentRun
from agents.runtime.prompting import unfence_data
from casework.support.agents import PROMPTS, SUPPORT_AGENTS
from tests.fakes.fixtures import fake_openai  # noqa: F401 - fixture
from tests.fakes.llm_servers import Reply, error, json_answer, text, tool_calls
from tests.support.conftest import send, triage_run

pytestmark = pytest.mark.django_db(transaction=True)

SPANISH = "Hola, ¿cómo puedo descargar mi factura de marzo?"
SPANISH_EN = "Hello, how can I download my March invoice?"


def agent_of(body: dict) -> str:
    system = body["messages"][0]["content"]
    for key, prompt in PROMPTS.items():
        if system.startswith(prompt):
            return key
    raise AssertionError(f"No support agent's prompt in: {system[:100]!r}")


def case_data(body: dict) -> dict:
    return unfence_data(body["messages"][1]["content"])


def tool_results(body: dict) -> list:
    return [unfence_data(m["content"]) for m in body["messages"] if m["role"] == "tool"]


class SupportLLM:
    def __init__(self, server):
        self.server = server
        self.queued: dict[str, deque] = defaultdict(deque)
        self.lock = threading.Lock()
        self.translations = {SPANISH: SPANISH_EN}
        server.handler = self

    def queue(self, agent: str, *replies) -> None:
        with self.lock:
            self.queued[agent].extend(replies)

    def __call__(self, body: dict) -> Reply:
        agent = agent_of(body)
        with self.lock:
            if self.queued[agent]:
                made = self.queued[agent].popleft()
                return made(body) if callable(made) else made
        return getattr(self, agent)(body)

    def ticket_matcher(self, body):
        data = case_data(body)
        first = data["activated_tickets"][0]["ticket_id"]
        return json_answer({"matched_ticket_id": first, "confidence": "high"})

    def translator(self, body):
        messages = case_data(body)["messages"]
        english = all(m not in self.translations for m in messages)
        return json_answer({"original_language": "en" if english else "es", "is_english": english,
                            "original_messages": messages,
                            "translated_messages": [self.translations.get(m, m) for m in messages]})

    def supervisor(self, body):
        data = case_data(body)
        results = tool_results(body)
        if not results:
            return tool_calls(("customer_lookup", {"customer_id": data["customer_id"]}))
        customer = results[-1]
        said = " ".join(data["messages"]).lower()
        invoice = "invoice" in said or "factura" in said
        return json_answer({"urgency": "low" if customer["plan"] == "free" else "medium",
                            "ticket_type": "billing" if invoice else "technical",
                            "reasoning": f"{customer['plan']} customer asking a question.",
                            "requires_escalation": False})

    def _specialist(self, body, area):
        data = case_data(body)
        results = tool_results(body)
        if not results:
            return tool_calls(("kb_search", {"query": "download invoice" if area == "billing" else "export error"}))
        hits = results[-1].get("results", []) if "results" in results[-1] else []
        said = " ".join(data["messages"]).lower()
        question = "how" in said or "cómo" in said
        return json_answer({
            "urgency": data["supervisor_decision"]["urgency"],
            "extracted_info": {"product_area": area, "issue_type": "how_to", "sentiment": "calm",
                               "language": data["language"]},
            "recommended_action": "auto_respond" if hits and question else "route_specialist",
            "suggested_response": "Hola: Ajustes > Facturación > Facturas." if data["language"] == "es"
            else "Hello: Settings > Billing > Invoices.",
            "relevant_articles": [h["id"] for h in hits[:2]],
            "reasoning": "An article answers it." if hits else "No article."})

    def billing(self, body):
        return self._specialist(body, "billing")

    def technical(self, body):
        return self._specialist(body, "technical")

    def general(self, body):
        return self._specialist(body, "general")

    def bodies(self, agent: str) -> list[dict]:
        return [r.json for r in self.server.requests if agent_of(r.json) == agent]


@pytest.fixture
def llm(fake_openai):  # noqa: F811 - the fixture imported above
    return SupportLLM(fake_openai)


def test_a_translated_question_is_triaged_with_real_tool_calls_and_auto_answered(llm, alice, support_data):
    _, ticket = send(alice, "CUST-003", SPANISH)
    run = triage_run(ticket)
    assert run.status == AgentRun.Status.COMPLETED and run.provider == "openai"
    assert set(run.results) == {"translator", "supervisor", "billing"}
    supervisor_requests = llm.bodies("supervisor")
    assert len(supervisor_requests) == 2  # the tool call, then the answer
    assert [t["function"]["name"] for t in supervisor_requests[0]["tools"]] == ["customer_lookup", "find_related_cases"]
    assert tool_results(supervisor_requests[1])[0]["plan"] == "free"
    billing = llm.bodies("billing")
    assert [t["function"]["name"] for t in billing[0]["tools"]] == ["kb_search"]
    assert case_data(billing[0])["messages"] == [SPANISH_EN]
    assert {h["id"] for h in tool_results(billing[1])[0]["results"]} >= {"kb_002"}
    assert AgentCall.objects.filter(run=run, kind="tool", name="kb_search", status="ok").count() == 1
    translator = llm.bodies("translator")[0]
    assert translator["response_format"]["json_schema"]["schema"] == SUPPORT_AGENTS["translator"].output_schema()

    ticket.refresh_from_db()
    assert ticket.language == "es" and ticket.triage["translation"]["status"] == "translated"
    assert ticket.messages.get().text_en == SPANISH_EN
    assert ticket.recommended_action == "auto_respond" and ticket.lifecycle == "answer_ready"
    assert ticket.suggested_reply.startswith("Hola")
    assert "kb_002" in ticket.triage["result"]["relevant_articles"]


def test_a_follow_up_the_model_matches_is_appended_and_triaged_again(llm, alice, support_data):
    _, ticket = send(alice, "CUST-002", "The CSV export fails with an error.")
    assert ticket.lifecycle == "routed"
    run, again = send(alice, "CUST-002", "Any news on the export?")
    assert again.pk == ticket.pk and run.state["matched"] is True
    (matcher,) = llm.bodies("ticket_matcher")
    assert [t["ticket_id"] for t in case_data(matcher)["activated_tickets"]] == [ticket.ticket_id]
    assert AgentRun.objects.filter(case=ticket.case, mode="triage").count() == 2


@pytest.mark.parametrize("answer", [
    {"matched_ticket_id": "TKT-ZZZZZZZZ", "confidence": "high"},
    {"matched_ticket_id": None, "confidence": "low"},
], ids=["unknown-id", "no-match"])
def test_an_unknown_or_absent_match_opens_a_new_ticket(llm, alice, support_data, answer):
    _, ticket = send(alice, "CUST-002", "The CSV export fails with an error.")
    llm.queue("ticket_matcher", json_answer(answer))
    _, other = send(alice, "CUST-002", "The CSV export fails with an error.")
    assert other.pk != ticket.pk


def test_a_failed_matcher_opens_a_new_ticket(llm, alice, support_data):
    _, ticket = send(alice, "CUST-002", "The CSV export fails with an error.")
    llm.queue("ticket_matcher", error(401, "Incorrect API key provided"))
    run, other = send(alice, "CUST-002", "The CSV export fails with an error.")
    assert other.pk != ticket.pk
    assert run.results["ticket_matcher"]["error_type"] == "authentication"


def test_escalation_skips_the_specialist(llm, alice, support_data):
    def escalate(body):
        if not tool_results(body):
            return tool_calls(("customer_lookup", {"customer_id": case_data(body)["customer_id"]}))
        return json_answer({"urgency": "critical", "ticket_type": "technical", "requires_escalation": True,
                            "reasoning": "Account takeover reported."})

    llm.queue("supervisor", escalate, escalate)
    _, ticket = send(alice, "CUST-001", "Someone took over our admin account.")
    run = triage_run(ticket)
    assert set(run.results) == {"translator", "supervisor"}
    assert not llm.bodies("technical")
    ticket.refresh_from_db()
    assert ticket.recommended_action == "escalate_human" and ticket.urgency == "critical"


def test_a_failed_translator_continues_on_the_originals_and_is_not_auto_answered(llm, alice, support_data):
    llm.queue("translator", *[error(500, "translator backend down")] * 4)
    _, ticket = send(alice, "CUST-003", SPANISH)
    ticket.refresh_from_db()
    assert case_data(llm.bodies("billing")[0])["messages"] == [SPANISH]
    assert ticket.triage["translation"]["status"] == "failed"
    assert ticket.recommended_action == "route_specialist"
    assert ticket.triage["guards"]


def test_a_supervisor_answering_out_of_schema_becomes_route_specialist(llm, alice, support_data):
    bad = text('{"urgency": "whenever", "ticket_type": "billing"}')
    llm.queue("supervisor", tool_calls(("customer_lookup", {"customer_id": "CUST-003"})), bad, bad)
    _, ticket = send(alice, "CUST-003", "How do I download an invoice?")
    ticket.refresh_from_db()
    assert ticket.recommended_action == "route_specialist"
    assert [f["agent"] for f in ticket.triage["failures"]] == ["supervisor"]
    assert not llm.bodies("billing")


def test_a_kb_search_with_bad_arguments_gives_no_articles_and_no_auto_answer(llm, alice, support_data):
    llm.queue("billing", tool_calls(("kb_search", {"q": "invoice"})))
    _, ticket = send(alice, "CUST-003", "How do I download an invoice?")
    ticket.refresh_from_db()
    run = triage_run(ticket)
    call = AgentCall.objects.get(run=run, kind="tool", name="kb_search")
    assert call.status == "error" and call.error_type == "InvalidArguments"
    assert ticket.triage["kb_failed"] is True
    assert ticket.recommended_action == "route_specialist"
    assert json.dumps(ticket.triage["result"]["relevant_articles"]) == "[]"


def test_a_model_naming_another_customers_ticket_is_ignored(llm, alice, support_data):
    _, theirs = send(alice, "CUST-002", "The CSV export fails with an error.")
    _, own = send(alice, "CUST-003", "The PDF import fails with an error.")
    llm.queue("ticket_matcher", json_answer({"matched_ticket_id": theirs.ticket_id, "confidence": "high"}))
    run, other = send(alice, "CUST-003", "The CSV export fails with an error.")
    assert run.state["matched"] is False and other.pk not in (theirs.pk, own.pk)
    assert theirs.messages.count() == 1


def test_a_completed_ticket_is_not_offered_to_the_matcher(llm, alice, support_data):
    from casework.support.services import ticket_close_no_action

    _, ticket = send(alice, "CUST-002", "The CSV export fails with an error.")
    ticket_close_no_action(actor=alice, ticket=ticket, reason="Solved by phone.")
    _, other = send(alice, "CUST-002", "The CSV export fails with an error.")
    assert other.pk != ticket.pk and not llm.bodies("ticket_matcher")
