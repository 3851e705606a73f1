"""Context window management (seed 004, section 3) and the token estimate it relies on."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from agents.llm.base import Message, ToolCall
from agents.llm.tokens import estimate_messages_tokens, estimate_text_tokens
from agents.runtime.agent import Agent
from agents.runtime.context import SAFETY_MARGIN, budget_for, manage_context
from agents.runtime.prompting import unfence_data
from agents.runtime.runner import run_tool_loop
from agents.runtime.tools import Tool
from tests.fakes.llm_servers import json_answer, text, tool_calls

WORDS = "The quick brown fox jumps over the lazy dog while the investigator reads the ledger. "


def filler(tokens: int) -> str:
    """English text of about `tokens` estimated tokens."""
    out = ""
    while estimate_text_tokens(out) < tokens:
        out += WORDS
    return out


def conversation(turns: int, *, size: int = 100) -> list[Message]:
    """System, the task, then `turns` tool rounds: assistant asks, tool answers."""
    messages = [Message("system", "You are an analyst."), Message("user", "The task: " + filler(20))]
    for i in range(turns):
        messages.append(Message("assistant", "", tool_calls=[ToolCall(f"c{i}a", "lookup", {"n": i}),
                                                              ToolCall(f"c{i}b", "lookup", {"n": -i})]))
        messages.append(Message("tool", filler(size), tool_call_id=f"c{i}a"))
        messages.append(Message("tool", filler(size), tool_call_id=f"c{i}b"))
    return messages


def assert_tool_results_follow_their_calls(messages: list[Message]) -> None:
    pending: set[str] = set()
    for m in messages:
        if m.role == "tool":
            assert m.tool_call_id in pending, f"tool result {m.tool_call_id} kept without its call"
            pending.discard(m.tool_call_id)
        else:
            assert not pending, f"tool calls {pending} kept without their results"
            pending = {c.id for c in m.tool_calls}
    assert not pending


def test_the_budget_keeps_a_ten_percent_margin_after_the_response():
    assert SAFETY_MARGIN == 0.10
    assert budget_for(10_000, 1_000) == 8_100
    assert budget_for(128_000, 1024) == int((128_000 - 1024) * 0.9)


def test_a_conversation_that_fits_is_left_alone():
    messages = conversation(2)
    kept, events = manage_context(messages, context_tokens=100_000, max_tokens=1000)
    assert kept is messages
    assert events == []


def test_truncation_keeps_system_and_task_and_drops_the_oldest_rounds():
    messages = conversation(6)
    context = 1000
    kept, events = manage_context(messages, context_tokens=context, max_tokens=200)

    assert kept[:2] == messages[:2]
    assert kept[-3:] == messages[-3:]  # the newest round survives whole
    assert estimate_messages_tokens(kept) <= budget_for(context, 200)
    dropped = len(messages) - len(kept)
    assert dropped > 0 and dropped % 3 == 0  # whole rounds only
    assert messages[2] not in kept  # the oldest round went first
    (event,) = events
    assert event.as_dict() == {"strategy": "truncate", "removed_messages": dropped,
                               "tokens_before": estimate_messages_tokens(messages),
                               "tokens_after": estimate_messages_tokens(kept), "budget": budget_for(context, 200)}


@pytest.mark.parametrize("context", [700, 900, 1100, 1500, 2000])
def test_truncation_never_separates_a_tool_call_from_its_results(context):
    kept, _ = manage_context(conversation(5, size=60), context_tokens=context, max_tokens=100)
    assert_tool_results_follow_their_calls(kept)
    assert [m.role for m in kept[:2]] == ["system", "user"]


def test_summarise_replaces_the_older_half_with_the_summariser_s_text():
    messages = conversation(6)
    asked: list[list[Message]] = []

    def summariser(old: list[Message]) -> str:
        asked.append(old)
        return "Rounds 0-2 found nothing unusual."

    kept, events = manage_context(messages, context_tokens=1500, max_tokens=200, strategy="summarise",
                                  summarise=summariser)

    (old,) = asked
    assert old == messages[2:11]  # the three oldest rounds, whole
    assert kept[:2] == messages[:2]
    assert kept[2] == Message("user", "Summary of the earlier conversation:\nRounds 0-2 found nothing unusual.")
    assert kept[3:] == messages[11:]
    assert [e.strategy for e in events] == ["summarise"]
    assert events[0].removed_messages == 9
    assert_tool_results_follow_their_calls(kept)


def test_a_summary_that_still_does_not_fit_is_followed_by_truncation():
    messages = conversation(6)
    kept, events = manage_context(messages, context_tokens=900, max_tokens=200, strategy="summarise",
                                  summarise=lambda old: "Short summary.")

    assert [e.strategy for e in events] == ["summarise", "truncate"]
    assert kept[2].content.startswith("Summary of the earlier conversation")
    assert estimate_messages_tokens(kept) <= budget_for(900, 200)
    assert_tool_results_follow_their_calls(kept)


# --- Through the tool loop, over HTTP --------------------------------------------------------


class Query(BaseModel):
    page: int


class Answer(BaseModel):
    pages_read: int


def read_page(args: Query) -> dict:
    return {"page": args.page, "text": filler(300)}


reader = Agent(id="test_reader", system_prompt="Read pages, then say how many you read.", output_model=Answer,
               tools=(Tool("read_page", "Read one page.", Query, read_page, consequence="read_only"),), max_tokens=200)


def test_the_tool_loop_prunes_old_pages_and_records_it(fake_openai, settings):
    settings.LLM_CONTEXT_TOKENS = 1400  # budget (1400 - 200) x 0.9 = 1080: about three pages
    fake_openai.script(*[tool_calls(("read_page", {"page": n})) for n in range(1, 6)], json_answer({"pages_read": 5}))

    result = run_tool_loop(reader, {"book": "ledger"})

    assert result.ok, result.error
    assert result.context_events, "no pruning was recorded"
    assert {e["strategy"] for e in result.context_events} == {"truncate"}
    assert all(e["tokens_after"] <= e["budget"] == 1080 for e in result.context_events)
    last = fake_openai.requests[-1].messages
    assert [m["role"] for m in last[:2]] == ["system", "user"]
    assert len(last) < 2 + 2 * 5  # some pages were dropped ...
    assert unfence_data(last[-1]["content"])["page"] == 5  # ... the newest kept


def test_the_summarise_strategy_asks_the_model_for_the_summary(fake_openai, settings):
    settings.LLM_CONTEXT_TOKENS = 1400

    pages = iter(range(1, 6))

    def script(body):
        if body["messages"][0]["content"].startswith("Summarise the conversation"):
            return text("Pages 1-2 were ledger entries.")
        page = next(pages, None)
        return tool_calls(("read_page", {"page": page})) if page else json_answer({"pages_read": 5})

    fake_openai.handler = script
    result = run_tool_loop(reader, {"book": "ledger"}, context_strategy="summarise")

    assert result.ok, result.error
    summary_requests = [r for r in fake_openai.requests
                        if r.messages[0]["content"].startswith("Summarise the conversation")]
    assert summary_requests
    assert "summarise" in {e["strategy"] for e in result.context_events}
    assert any(m["content"] == "Summary of the earlier conversation:\nPages 1-2 were ledger entries."
               for r in fake_openai.requests for m in r.messages)


# --- The token estimate ------------------------------------------------------------------
#
# No tokenizer can be downloaded here, so there is no exact count to compare with offline.
# The one fixed reference used: OpenAI's cookbook "How to count tokens with tiktoken" sends
# the six messages below to the API, which reported 129 prompt tokens (gpt-4-0613 and
# gpt-3.5-turbo-0613, cl100k_base, role/name overhead included). Beyond that, the estimate is
# checked against OpenAI's published rules of thumb for English (about 4 characters, or
# 0.75 words, per token) and for monotonicity.

COOKBOOK_MESSAGES = [
    ("system", "", "You are a helpful, pattern-following assistant that translates corporate jargon into "
                   "plain English."),
    ("system", "example_user", "New synergies will help drive top-line growth."),
    ("system", "example_assistant", "Things working well together will increase revenue."),
    ("system", "example_user", "Let's circle back when we have more bandwidth to touch base on opportunities "
                               "for increased leverage."),
    ("system", "example_assistant", "Let's talk later when we're less busy about how to do better."),
    ("user", "", "This late pivot means we don't have time to boil the ocean for the client deliverable."),
]
COOKBOOK_API_PROMPT_TOKENS = 129

PROSE = (
    "Fraud analysts review alerts raised by the transaction monitoring system. Each alert names an account, "
    "the transactions that triggered it and the rule that fired. The analyst checks the customer's history, "
    "looks for earlier chargebacks, compares the device and the location with the usual ones, and decides "
    "whether the activity is fraud, a false positive, or needs a call to the customer. The decision and its "
    "reasons are written down so that a manager can review them later, and so that the rules can be tuned."
)


def test_the_estimate_is_within_a_quarter_of_the_api_count_for_the_cookbook_messages():
    messages = [Message(role, content, name=name) for role, name, content in COOKBOOK_MESSAGES]
    estimate = estimate_messages_tokens(messages)
    assert abs(estimate - COOKBOOK_API_PROMPT_TOKENS) / COOKBOOK_API_PROMPT_TOKENS <= 0.25, estimate


def test_english_prose_is_about_four_characters_or_three_quarters_of_a_word_per_token():
    estimate = estimate_text_tokens(PROSE)
    by_chars = len(PROSE) / 4
    by_words = len(PROSE.split()) / 0.75
    assert 0.75 * by_chars <= estimate <= 1.25 * by_chars
    assert 0.75 * by_words <= estimate <= 1.25 * by_words


def test_dense_json_is_not_undercounted_by_the_character_rule():
    dense = json.dumps([{"a": i, "b": [i, i]} for i in range(50)], separators=(",", ":"))
    assert estimate_text_tokens(dense) > len(dense) / 4


def test_the_estimate_grows_with_the_text_and_the_messages():
    sizes = [estimate_text_tokens(PROSE[:n]) for n in range(0, len(PROSE) + 1, 25)]
    assert sizes == sorted(sizes)
    assert estimate_text_tokens("") == 0 and estimate_text_tokens("a") == 1
    one = [Message("user", PROSE)]
    assert estimate_messages_tokens(one + [Message("assistant", "ok")]) > estimate_messages_tokens(one)
    with_call = [Message("assistant", "", tool_calls=[ToolCall("c", "lookup", {"id": "C-1"})])]
    assert estimate_messages_tokens(with_call) > estimate_messages_tokens([Message("assistant", "")])
