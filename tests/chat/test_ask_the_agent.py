"""'Ask the agent' on every case page: offline intents, storage per case and user, audit, the
case type's read-only tools and the context window, over the fake OpenAI and Anthropic servers."""

from __future__ import annotations

import pytest

from agents.chat.models import ChatMessage, Conversation
from agents.llm.registry import reset_provider
from agents.runtime.prompting import unfence_data
from audit.models import AuditEntry
from casework.cases.services import case_create
from casework.cases.types import CASE_TYPES
from tests.fakes.llm_servers import json_answer, tool_calls
from tests.releases.conftest import SEED, submit

pytestmark = pytest.mark.django_db(transaction=True)


def ask(client, case, question: str):
    return client.post(f"/cases/{case.reference}/ask/send/", {"content": question}, HTTP_HX_REQUEST="true")


def answers(case) -> list[str]:
    return list(ChatMessage.objects.filter(conversation__case=case, role="assistant").order_by("id")
                .values_list("content", flat=True))


def test_offline_it_answers_what_was_found_why_and_which_tools_ran(alice_client):
    rel, _ = submit(SEED)
    case = rel.case
    report = rel.reports.get()

    page = ask(alice_client, case, "What was found?").content.decode()
    assert report.report_id in page and "test_refund_flow" in page
    ask(alice_client, case, "Why this severity?")
    ask(alice_client, case, "Which tools ran?")
    found, why, tools = answers(case)
    assert why.startswith("The release is rated high because:")
    assert "get_release_summary(release_id=rel-2-1-0)" in tools and "file_risk_report(" in tools
    page = ask(alice_client, case, "Write the release notes as a poem").content.decode()
    assert "That question needs a language model" in page
    assert 'data-messages="8"' in page and "offline" in page


def test_conversations_are_per_user_audited_and_can_start_afresh(alice_client, ivan):
    from django.test import Client

    rel, _ = submit(SEED)
    ask(alice_client, rel.case, "What was found?")
    other = Client()
    other.force_login(ivan)
    panel = other.get(f"/cases/{rel.case.reference}/ask/", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-messages="0"' in panel

    actions = list(AuditEntry.objects.filter(case_id=rel.case.pk, action__startswith="conversation.")
                   .values_list("action", "actor"))
    assert actions == [("conversation.started", "alice"), ("conversation.asked", "alice"),
                       ("conversation.answered", "agent:case_assistant")]
    alice_client.post(f"/cases/{rel.case.reference}/ask/new/", HTTP_HX_REQUEST="true")
    assert Conversation.objects.filter(case=rel.case, user__username="alice").count() == 2
    assert Conversation.objects.filter(case=rel.case, user__username="alice", is_open=True).count() == 1


@pytest.mark.parametrize("case_type", [k for k in CASE_TYPES if k != "release_risk"])
def test_every_case_type_has_the_panel(alice, alice_client, case_type):
    case = case_create(actor=alice, case_type=case_type, title="A case", priority="high")

    page = alice_client.get(f"/cases/{case.reference}/").content.decode()
    assert "Ask the agent" in page and f"/cases/{case.reference}/ask/" in page
    answer = ask(alice_client, case, "Why this priority?").content.decode()
    assert "The case&#x27;s priority is high." in answer


def test_an_empty_question_is_refused(alice, alice_client):
    case = case_create(actor=alice, case_type="fraud_alert", title="A case")
    assert ask(alice_client, case, "  ").status_code == 400
    assert not ChatMessage.objects.exists()


def request_data(body: dict) -> dict:
    first = body["messages"][0] if body["messages"][0]["role"] == "user" else body["messages"][1]
    content = first["content"] if isinstance(first["content"], str) else first["content"][0]["text"]
    return unfence_data(content)


def test_over_openai_it_gets_fenced_context_read_only_tools_and_the_history(alice_client, fake_openai):
    # The detective's run answers without filing and fails; the conversation still works.
    fake_openai.script(json_answer({"answer": "No detective yet."}))
    rel, _ = submit(SEED)
    fake_openai.reset()
    fake_openai.script(tool_calls(("get_test_details", {"release_id": rel.release_id})),
                       json_answer({"answer": "Two payment tests failed."}),
                       json_answer({"answer": "test_refund_flow is critical."}))

    ask(alice_client, rel.case, "Which tests failed?")
    ask(alice_client, rel.case, "Which one is critical?")

    first, _, second = fake_openai.requests
    tools = {t["function"]["name"] for t in first.json["tools"]}
    assert tools == {"get_case_timeline", "find_related_cases", "get_release_summary",
                     "get_test_details"}  # never file_risk_report
    assert request_data(first.json)["case"]["reference"] == rel.case.reference
    assert [m["content"] for m in second.messages[2:]] == ["Which tests failed?", "Two payment tests failed.",
                                                           "Which one is critical?"]
    answer = ChatMessage.objects.filter(role="assistant").first()
    assert answer.tool_calls[0]["name"] == "get_test_details" and answer.provider == "openai"
    assert answers(rel.case) == ["Two payment tests failed.", "test_refund_flow is critical."]


def test_over_anthropic_it_answers(alice, alice_client, fake_anthropic):
    case = case_create(actor=alice, case_type="support_ticket", title="Double charge")
    fake_anthropic.script(json_answer({"answer": "Nothing has run on this ticket yet."}))

    page = ask(alice_client, case, "Anything found?").content.decode()

    assert "Nothing has run on this ticket yet." in page and "anthropic" in page
    (request,) = fake_anthropic.requests
    assert {t["name"] for t in request.json["tools"]} == {"get_case_timeline", "find_related_cases", "customer_lookup"}


@pytest.mark.parametrize("strategy", ["truncate", "summarise"])
def test_a_small_window_prunes_the_history_and_the_panel_says_so(alice, alice_client, fake_openai, settings,
                                                                   strategy):
    settings.CHAT_CONTEXT_STRATEGY = strategy
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")

    def model(body):
        if body["messages"][0]["content"].startswith("Summarise the conversation"):
            return json_answer({"summary": "Four questions about context, each noted."})
        return json_answer({"answer": "Noted. " + "details " * 120})

    fake_openai.handler = model
    for n in range(4):
        ask(alice_client, case, f"Question {n}: " + "context " * 120)
    settings.LLM_CONTEXT_TOKENS = 1800  # budget (1800 - 800) x 0.9 = 900 tokens
    reset_provider()  # the provider reads its window size when it is built
    page = ask(alice_client, case, "And now?").content.decode()

    last = ChatMessage.objects.filter(role="assistant").last()
    assert last.context_events and last.context_events[0]["strategy"] == strategy
    assert last.window_tokens <= last.budget_tokens == 900
    assert f"Context {strategy}d" in page and "of a 900-token budget" in page
    if strategy == "summarise":
        final = fake_openai.requests[-1].messages
        assert final[2]["content"] == "Summary of the earlier conversation:\nFour questions about context, each noted."


def test_offline_it_uses_the_release_tools_and_the_timeline(alice_client):
    rel, _ = submit(SEED)

    tests_answer = ask(alice_client, rel.case, "Which tests failed?").content.decode()
    ask(alice_client, rel.case, "Show me the case history")

    assert "test_card_tokenise (payments): TimeoutError after 30 s" in tests_answer
    first, second = ChatMessage.objects.filter(role="assistant").order_by("id")
    assert [t["name"] for t in first.tool_calls] == ["get_test_details"]
    assert [t["name"] for t in second.tool_calls] == ["get_case_timeline"]
    assert "agent:detective: release.report_filed" in second.content


def test_offline_it_answers_from_another_case_types_results(alice_client):
    from tests.transactions.conftest import investigate, load

    case = investigate(load("card_testing")).case

    found = ask(alice_client, case, "What was found?").content.decode()
    tools = ask(alice_client, case, "Which tools ran?").content.decode()

    assert "From the agents&#x27; results:" in found and "reasoning_tool: summary: Card testing" in found
    assert "transactions run (completed)" in tools and "context_tool" in tools


def test_a_conversation_is_one_trace_holding_every_answer(alice_client, ivan):
    from django.test import Client

    rel, _ = submit(SEED)
    ask(alice_client, rel.case, "Which tests failed?")
    page = ask(alice_client, rel.case, "Why this severity?").content.decode()
    conversation = Conversation.objects.get()
    assert set(ChatMessage.objects.filter(role="assistant").values_list("trace_id", flat=True)) == {
        conversation.trace_id}
    trace_url = f"/cases/{rel.case.reference}/ask/trace/{conversation.trace_id}/"
    assert trace_url in page

    trace = alice_client.get(trace_url).content.decode()
    assert trace.count("conversation.send_message") == 2
    for span in ("agent.case_assistant", "llm.request", "tool.get_test_details"):
        assert span in trace
    other = Client()
    other.force_login(ivan)  # another user's conversation is not theirs to read
    assert other.get(trace_url).status_code == 404


def test_the_api_asks_reads_and_starts_afresh(api):
    rel, _ = submit(SEED)
    base = f"/api/cases/{rel.case.reference}/conversation/"

    assert api.post(base + "messages/", {"content": ""}, format="json").status_code == 400
    answer = api.post(base + "messages/", {"content": "Why this severity?"}, format="json")
    assert answer.status_code == 201 and answer.json()["content"].startswith("The release is rated high")
    body = api.get(base).json()
    assert body["message_count"] == 2 and body["provider"] == "offline"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    fresh = api.post(base + "new/").json()
    assert fresh["message_count"] == 0 and fresh["conversation"] != body["conversation"]


def test_the_admin_reads_conversations(alice_client, admin_user):
    from django.test import Client

    rel, _ = submit(SEED)
    ask(alice_client, rel.case, "What was found?")
    root = Client()
    root.force_login(admin_user)
    conversation = Conversation.objects.get()
    assert rel.case.reference in root.get("/admin/chat/conversation/").content.decode()
    assert "What was found?" in root.get(f"/admin/chat/conversation/{conversation.pk}/change/").content.decode()
