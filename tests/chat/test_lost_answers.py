"""An "Ask the agent" answer survives the infrastructure (issue 26): a task lost with the
broker's queue is sent again by a sweep (the person need not ask again), and a database
restart in the middle of an answer is retried, not shown as a failure."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from agents.chat import tasks
from agents.chat.models import ChatMessage
from agents.chat.tasks import chat_resend_lost
from casework.cases.services import case_create
from tests.fakes.db_restart import on_postgres, terminate_other_backends
from tests.fakes.llm_servers import json_answer

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "The card was tested with three small amounts in a minute."


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="Card testing")


def ask(client, case, question: str):
    return client.post(f"/cases/{case.reference}/ask/send/", {"content": question}, HTTP_HX_REQUEST="true")


def test_an_answer_whose_task_was_lost_is_sent_again_and_answered(alice_client, case, monkeypatch):
    with monkeypatch.context() as broker:  # the broker loses the message
        broker.setattr(tasks.chat_answer, "delay", lambda message_id: None)
        assert ask(alice_client, case, "What happened on the card?").status_code == 200
    answer = ChatMessage.objects.get(role="assistant")
    assert answer.status == "answering" and answer.started_at is None
    asked = answer.updated_at

    # Moments later: a worker may still take it.
    assert chat_resend_lost(now=asked + timedelta(seconds=settings.CHAT_RESEND_AFTER_SECONDS - 1)) == 0
    # Past CHAT_RESEND_AFTER_SECONDS with no progress: sent again (and answered, eagerly here).
    assert chat_resend_lost(now=asked + timedelta(seconds=settings.CHAT_RESEND_AFTER_SECONDS + 1)) == 1

    answer.refresh_from_db()
    assert answer.status == "done" and answer.content and answer.error == ""
    assert chat_resend_lost(now=timezone.now() + timedelta(seconds=settings.CHAT_RESEND_AFTER_SECONDS + 1)) == 0


def test_an_answer_asked_too_long_ago_is_left_to_fail_as_stale(alice_client, case, monkeypatch, settings):
    settings.CHAT_RESEND_WITHIN_SECONDS, settings.CHAT_ANSWER_STALE_SECONDS = 600, 90
    with monkeypatch.context() as broker:
        broker.setattr(tasks.chat_answer, "delay", lambda message_id: None)
        ask(alice_client, case, "What happened on the card?")
    answer = ChatMessage.objects.get(role="assistant")
    # Asked 11 minutes ago (past CHAT_RESEND_WITHIN_SECONDS), and no worker ever took it.
    asked = timezone.now() - timedelta(minutes=11)
    ChatMessage.objects.filter(pk=answer.pk).update(created_at=asked, updated_at=asked)

    assert chat_resend_lost(now=timezone.now()) == 0  # too old to send again ...
    answer.refresh_from_db()
    assert answer.status == "answering" and answer.started_at is None

    # ... so the page, polling it, fails it as stale and says why.
    page = alice_client.get(f"/cases/{case.reference}/ask/message/{answer.pk}/", HTTP_HX_REQUEST="true")
    answer.refresh_from_db()
    assert answer.status == "failed" and answer.content == ""
    assert answer.error == "The answer stopped: no progress for 90 s (no worker took it). Ask again."
    assert "no worker took it" in page.content.decode()


@on_postgres
def test_a_database_restart_in_the_middle_of_an_answer_is_retried_not_failed(alice_client, case, fake_openai):
    def terminate_then_answer(body: dict):
        assert terminate_other_backends() >= 1  # the worker's connection dies while the model answers
        return json_answer({"answer": ANSWER})

    fake_openai.script(terminate_then_answer, json_answer({"answer": ANSWER}))

    assert ask(alice_client, case, "What happened on the card?").status_code == 200

    answer = ChatMessage.objects.get(role="assistant")
    assert answer.status == "done", answer.error
    assert answer.content == ANSWER and answer.error == ""
    assert fake_openai.request_count == 2  # the interrupted answer was asked again, once
