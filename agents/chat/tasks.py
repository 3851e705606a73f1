"""The worker's half of "Ask the agent": writing an answer as it arrives (on the "chat" queue,
so that a person waiting in the page is not behind a backlog of pipeline runs)."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=600, time_limit=660, ignore_result=True)
def chat_answer(message_id: int) -> None:
    """Answer one question. A duplicate delivery finds the message claimed and does nothing."""
    from agents.chat.services import message_answer

    message_answer(message_id=message_id)
