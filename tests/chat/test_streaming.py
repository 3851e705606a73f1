"""'Ask the agent' answers appear as they arrive: the question is saved with an empty answer,
a worker writes the answer into it as the provider streams it, and the page reads it every
400 ms. A stream that breaks off keeps what arrived and names the error; an answer whose
worker stopped is failed when next looked at."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agents.chat.models import ChatMessage
from agents.chat.streaming import AnswerBuffer, answer_preview
from agents.llm.base import LLMRequest, Message
from agents.llm.offline import OfflineProvider
from agents.runtime import aio
from audit.models import AuditEntry
from casework.cases.services import case_create
from tests.fakes.llm_servers import json_answer, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "Two payment tests failed: test_refund_flow is critical and test_card_tokenise timed out."


def ask(client, case, question: str):
    return client.post(f"/cases/{case.reference}/ask/send/", {"content": question}, HTTP_HX_REQUEST="true")


def fragment(client, case, answer_id: int) -> str:
    return client.get(f"/cases/{case.reference}/ask/message/{answer_id}/", HTTP_HX_REQUEST="true").content.decode()


def content_of(html: str) -> str:
    return re.search(r'<div class="chat-content">(.*?)</div>', html, re.S).group(1).strip()


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="Card testing")


def test_the_page_shows_the_answer_as_it_arrives(alice_client, case, fake_openai, worker_thread):
    fake_openai.script(json_answer({"answer": ANSWER}, chunk_delay=0.25))

    panel = ask(alice_client, case, "Which tests failed?").content.decode()

    answer = ChatMessage.objects.get(role="assistant")
    assert 'data-status="answering"' in panel
    assert f'hx-get="/cases/{case.reference}/ask/message/{answer.pk}/"' in panel and 'hx-trigger="load delay:400ms"' in panel
    partial, deadline = "", time.monotonic() + 20
    while time.monotonic() < deadline:
        html = fragment(alice_client, case, answer.pk)
        if 'data-status="answering"' in html and content_of(html):
            partial = html
            break
        time.sleep(0.1)
    assert partial, "no part of the answer was shown before it was complete"
    shown = content_of(partial)
    assert ANSWER.startswith(shown) and shown != ANSWER
    assert "Still answering" in partial and "hx-trigger" in partial

    worker_thread[0].join(timeout=20)
    done = fragment(alice_client, case, answer.pk)
    assert 'data-status="done"' in done and ANSWER in done and "hx-trigger" not in done
    assert 'id="chat-info-' in done and 'hx-swap-oob="true"' in done and 'data-messages="2"' in done
    assert fake_openai.requests[0].json["stream"] is True
    assert AuditEntry.objects.filter(case_id=case.pk, action="conversation.answered").count() == 1


def test_a_stream_cut_mid_answer_keeps_what_arrived_and_names_the_error(alice_client, case, fake_openai):
    fake_openai.script(json_answer({"answer": ANSWER}, cut_after=6))

    ask(alice_client, case, "Which tests failed?")

    answer = ChatMessage.objects.get(role="assistant")
    assert answer.status == "failed"
    assert answer.content and ANSWER.startswith(answer.content) and answer.content != ANSWER
    assert "broke off after" in answer.error and "(network)" in answer.error
    assert fake_openai.request_count == 1  # what was shown is not answered again
    html = fragment(alice_client, case, answer.pk)
    assert 'data-status="failed"' in html and "Incomplete answer:" in html and "broke off" in html
    failed = AuditEntry.objects.get(case_id=case.pk, action="conversation.failed")
    assert failed.data["error_type"] == "stream_interrupted" and failed.data["answer"] == answer.content


def test_a_failure_before_any_text_is_retried_as_usual(alice_client, case, fake_openai):
    fake_openai.script(json_answer({"answer": ANSWER}, cut_after=0), json_answer({"answer": ANSWER}))

    ask(alice_client, case, "Which tests failed?")

    answer = ChatMessage.objects.get(role="assistant")
    assert answer.status == "done" and answer.content == ANSWER
    assert fake_openai.request_count == 2


def test_tool_calls_stream_too(alice_client, case, fake_openai):
    fake_openai.script(tool_calls(("get_case_timeline", {"reference": case.reference, "limit": 5})),
                       json_answer({"answer": "The case was opened by alice."}))

    ask(alice_client, case, "Who opened it?")

    answer = ChatMessage.objects.get(role="assistant")
    assert answer.status == "done" and answer.content == "The case was opened by alice."
    assert [t["name"] for t in answer.tool_calls] == ["get_case_timeline"] and answer.tool_calls[0]["success"]
    assert all(r.json["stream"] for r in fake_openai.requests)


def test_over_anthropic_the_answer_streams(alice_client, case, fake_anthropic):
    fake_anthropic.script(json_answer({"answer": ANSWER}, cut_after=5))

    ask(alice_client, case, "Which tests failed?")

    answer = ChatMessage.objects.get(role="assistant")
    assert fake_anthropic.requests[0].json["stream"] is True
    assert answer.status == "failed" and "broke off after" in answer.error
    assert answer.content and ANSWER.startswith(answer.content)


def test_a_second_question_waits_for_the_answer(alice, alice_client, case, fake_openai, worker_thread):
    fake_openai.script(json_answer({"answer": ANSWER}, chunk_delay=0.2))
    panel = ask(alice_client, case, "Which tests failed?").content.decode()
    assert re.search(r'id="ask-button-[^"]+" disabled', panel)

    refused = ask(alice_client, case, "And now?")

    assert refused.status_code == 409 and "still answering" in refused.content.decode()
    api = APIClient()
    api.force_authenticate(alice)
    url = f"/api/cases/{case.reference}/conversation/"
    assert api.get(url).json()["messages"][-1]["status"] in ("answering", "done")
    busy = api.post(url + "messages/", {"content": "And now?"}, format="json")
    assert busy.status_code == 409 and busy.json()["code"] == "answering"
    assert ChatMessage.objects.filter(role="user").count() == 1


def test_an_answer_with_no_progress_is_failed_when_looked_at(alice_client, case, worker_thread, settings):
    ask(alice_client, case, "Which tests failed?")  # the thread-worker answers; make a stuck one
    worker_thread[0].join(timeout=20)
    stuck = ChatMessage.objects.create(conversation=ChatMessage.objects.first().conversation, role="assistant",
                                       content="Two payment", status="answering", started_at=timezone.now(),
                                       updated_at=timezone.now() - timedelta(seconds=settings.CHAT_ANSWER_STALE_SECONDS + 1))

    html = fragment(alice_client, case, stuck.pk)

    stuck.refresh_from_db()
    assert stuck.status == "failed" and "no progress" in stuck.error and stuck.content == "Two payment"
    assert 'data-status="failed"' in html and "its worker stopped" in html
    assert AuditEntry.objects.filter(case_id=case.pk, action="conversation.failed", actor="system").count() == 1
    assert ask(alice_client, case, "Again?").status_code == 200  # no longer blocks the next question


def test_the_offline_provider_streams_its_answer_word_by_word(settings):
    settings.OFFLINE_STREAM_DELAY_SECONDS = 0
    pieces: list[str] = []
    request = LLMRequest(messages=[Message("user", "Why?")], agent_id="case_assistant.summary",
                         input_data={"conversation": "user: why\nassistant: because"}, on_delta=pieces.append)

    completion = aio.run(OfflineProvider().acomplete(request))

    assert len(pieces) > 3 and "".join(pieces) == completion.text


def test_the_buffer_starts_afresh_for_each_request():
    buffer = AnswerBuffer()
    buffer.delta('{"answer": "Let me')
    buffer.begin()
    buffer.delta('{"answer": "Two')
    buffer.tool("get_case_timeline")
    assert buffer.snapshot()[1:] == ('{"answer": "Two', ["get_case_timeline"])


@pytest.mark.parametrize(("raw", "shown"), [
    ('{"ans', ""),
    ('{"answer": "Two pay', "Two pay"),
    ('{"answer": "Line one\\nLine \\"two\\"', 'Line one\nLine "two"'),
    ('{"answer": "cut escape \\', "cut escape "),
    ('{"answer": "caf\\u00e9 and \\u00', "café and "),
    ('{"answer": "done."}', "done."),
    ('```json\n{"answer": "fenced', "fenced"),
    ("Plain prose, no JSON", "Plain prose, no JSON"),
])
def test_the_preview_shows_the_answer_string_so_far(raw, shown):
    assert answer_preview(raw) == shown


def test_writes_are_throttled_and_a_slow_model_keeps_the_answer_alive(api, case, fake_openai, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agents.chat import answering

    monkeypatch.setattr(answering, "HEARTBEAT_SECONDS", 0.3)
    pieces = ANSWER.split(" ")  # a text chunk per word, after a silent second
    fake_openai.script(json_answer({"answer": ANSWER}, delay=1.2, chunk_delay=0.03))

    with CaptureQueriesContext(connection) as queries:  # the API answers in the request's thread
        response = api.post(f"/api/cases/{case.reference}/conversation/messages/", {"content": "Which?"},
                            format="json")

    assert response.status_code == 201 and response.json()["content"] == ANSWER
    updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('UPDATE "chat_chatmessage"')]
    writes = [sql for sql in updates if '"content"' not in sql.split(" WHERE ")[0]]  # claim and heartbeats
    partial = [sql for sql in updates if '"content"' in sql.split(" WHERE ")[0]]  # text so far, then the final
    assert len(writes) >= 3  # claimed, then touched while the model said nothing
    assert 2 <= len(partial) < len(pieces) + 1  # text written as it grew, not once per chunk


def test_a_failure_outside_the_model_fails_the_answer_by_name(alice_client, case, monkeypatch):
    from agents.chat import answering

    def broken(case):
        raise RuntimeError("the case record could not be read")

    monkeypatch.setattr(answering, "case_context", broken)

    ask(alice_client, case, "Why this priority?")

    answer = ChatMessage.objects.get(role="assistant")
    assert answer.status == "failed" and answer.error == ("The agent failed: RuntimeError: the case record could "
                                                          "not be read")
    assert AuditEntry.objects.get(case_id=case.pk, action="conversation.failed").data["error_type"] == "internal"
