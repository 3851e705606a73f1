from __future__ import annotations

import threading

import pytest

from tests.fakes.fixtures import *  # noqa: F403 - fake_openai, fake_anthropic


@pytest.fixture
def worker_thread(monkeypatch):
    """The answer is written by a worker while the page reads it: here a thread stands for the
    Celery worker (tests run tasks eagerly, inside the request, otherwise). Joined at the end."""
    from agents.chat import tasks

    threads: list[threading.Thread] = []

    def delay(message_id: int) -> None:
        thread = threading.Thread(target=_answer, args=(message_id,), name=f"chat-answer-{message_id}")
        threads.append(thread)
        thread.start()

    monkeypatch.setattr(tasks.chat_answer, "delay", delay)
    yield threads
    for thread in threads:
        thread.join(timeout=30)


def _answer(message_id: int) -> None:
    from django.db import connection

    from agents.chat.tasks import chat_answer

    try:
        chat_answer(message_id)
    finally:
        connection.close()
