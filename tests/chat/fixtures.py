"""A thread standing for the Celery worker that writes "Ask the agent" answers, for tests that
watch an answer arrive (import `worker_thread` into a conftest or a test module)."""

from __future__ import annotations

import threading

import pytest

__all__ = ["worker_thread"]


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
