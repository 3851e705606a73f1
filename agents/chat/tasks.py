"""The worker's half of "Ask the agent": writing an answer as it arrives (on the "chat" queue,
so that a person waiting in the page is not behind a backlog of pipeline runs), and the sweep
that sends again an answer whose task was lost."""

from __future__ import annotations

import logging
from datetime import datetime

from celery import shared_task
from django.utils.dateparse import parse_datetime

logger = logging.getLogger(__name__)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, soft_time_limit=600, time_limit=660,
             ignore_result=True)
def chat_answer(self, message_id: int, claimed_at: str | None = None) -> None:
    """Answer one question. A duplicate delivery finds the message claimed and does nothing.
    A transient database error sends the task again with backoff, under the same claim."""
    from agents.chat.answering import AnswerInterrupted, message_answer
    from casework.db_transient import task_retry_transient

    try:
        message_answer(message_id=message_id, claimed_at=parse_datetime(claimed_at) if claimed_at else None)
    except AnswerInterrupted as exc:
        task_retry_transient(self, exc, args=(message_id,),
                             kwargs={"claimed_at": exc.claimed_at.isoformat() if exc.claimed_at else None})


@shared_task(ignore_result=True, soft_time_limit=60, time_limit=90)
def chat_resend_lost(now: datetime | str | None = None) -> int:
    """Send again every answer whose task was lost (a broker that lost its queue) or whose
    worker died, before the page fails it as stale; returns how many. `now`: the clock's
    unless a test gives one."""
    from agents.chat.answering import messages_resend_lost

    return messages_resend_lost(send=lambda message_id: chat_answer.apply_async((message_id,)),
                                now=parse_datetime(now) if isinstance(now, str) else now)
