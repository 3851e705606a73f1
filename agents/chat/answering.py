"""The worker's half of "Ask the agent": writing the answer to a question (message_answer),
and the sweep that sends a lost answer to a worker again (messages_resend_lost).

The answer is written into the stored message as it arrives (at most every
CHAT_STREAM_WRITE_SECONDS), and the page reads it every 400 ms until it is done or failed.
A failure part-way keeps what arrived and names the error.

The history sent is the conversation's last CHAT_HISTORY_MESSAGES complete messages; the
context manager prunes more when the window is small and records it.
"""

from __future__ import annotations

import concurrent.futures
import logging
import secrets
import time
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from opentelemetry import trace as otel_trace

from agents.chat.asker import asking
from agents.chat.assistant import assistant_agent
from agents.chat.context import case_context
from agents.chat.models import ChatMessage, Conversation
from agents.chat.streaming import AnswerBuffer, answer_preview
from agents.llm.base import Message
from agents.llm.registry import get_provider
from agents.llm.tokens import estimate_messages_tokens
from agents.runtime import aio
from agents.runtime.agent import AgentResult
from agents.runtime.context import budget_for
from agents.runtime.prompting import fence_data, system_prompt_for
from agents.runtime.runner import arun_tool_loop
from audit.services import audit_record
from audit.tracing import get_tracer
from casework.db_transient import is_transient_db_error

logger = logging.getLogger(__name__)


class AnswerInterrupted(Exception):
    """Answering met a transient database error (a restart, a lost connection): the answer is
    not failed. The worker retries it with backoff under the same claim (`claimed_at`)."""

    def __init__(self, message_id: int, claimed_at, cause: BaseException):
        super().__init__(f"Answer {message_id} interrupted by a transient database error: "
                         f"{type(cause).__name__}: {cause}")
        self.message_id = message_id
        self.claimed_at = claimed_at


def message_answer(*, message_id: int, claimed_at=None) -> bool:
    """Write the answer to a question (the worker's half of send_message). Claims the message
    first: a second delivery of the task finds it taken and does nothing (returns False).

    A transient database error raises AnswerInterrupted (the answer stays "answering"); the
    retry passes back `claimed_at`, this worker's claim, and answers afresh."""
    now = timezone.now()
    try:
        claim = Q(started_at__isnull=True) | Q(started_at=claimed_at) if claimed_at else Q(started_at__isnull=True)
        claimed = ChatMessage.objects.filter(claim, pk=message_id, status=ChatMessage.Status.ANSWERING).update(
            started_at=now, updated_at=now)
    except Exception as exc:
        if is_transient_db_error(exc):
            raise AnswerInterrupted(message_id, claimed_at, exc) from exc
        raise
    if not claimed:
        return False
    try:
        return _answer(message_id)
    except Exception as exc:
        if is_transient_db_error(exc):
            raise AnswerInterrupted(message_id, now, exc) from exc
        raise


def _answer(message_id: int) -> bool:
    answer = ChatMessage.objects.select_related("conversation__case", "conversation__user").get(pk=message_id)
    conversation = answer.conversation
    case, actor = conversation.case, conversation.user
    earlier = list(conversation.messages.filter(id__lt=answer.pk, status=ChatMessage.Status.DONE, error="")
                   .order_by("-id")[:settings.CHAT_HISTORY_MESSAGES])[::-1]
    history = [Message(role=m.role, content=m.content) for m in earlier]
    agent = assistant_agent(case.case_type)
    buffer = AnswerBuffer()
    try:
        data = case_context(case)
        provider = get_provider()
        with get_tracer().start_as_current_span("conversation.send_message",
                                                context=_trace_parent(conversation)) as span:
            span.set_attributes({"conversation.id": conversation.pk, "conversation.message_count": len(history),
                                 "case.reference": case.reference, "user": actor.get_username()})
            # The tools answer the person who asked: the asker rides into the loop's task and
            # each tool's thread (aio.submit and the tool runner carry context variables).
            with asking(actor):
                future = aio.submit(arun_tool_loop(
                    agent, data, history=history, max_tool_calls=settings.CHAT_MAX_TOOL_CALLS,
                    context_strategy=settings.CHAT_CONTEXT_STRATEGY, stream=buffer,
                    metadata={"case": case.reference, "conversation": str(conversation.pk)}))
            result = _follow(future, buffer, answer)
    except Exception as exc:  # noqa: BLE001 - never an answer left "answering" by a bug: failed, named
        if is_transient_db_error(exc):
            raise  # not the answer's failure: retried (message_answer)
        logger.exception("Answering chat message %s failed", message_id)
        failed = AgentResult(agent_id=agent.id, error=f"The agent failed: {type(exc).__name__}: {str(exc)[:300]}",
                             error_type="internal")
        _answer_save(actor=actor, case=case, answer=answer, content=answer_preview(buffer.snapshot()[1]),
                     result=failed, window=0, budget=0)
        return True
    window = estimate_messages_tokens([Message("system", system_prompt_for(agent.system_prompt, None)),
                                       Message("user", fence_data(data, label=agent.id)), *history])
    if result.context_events:
        window = result.context_events[-1]["tokens_after"]
    if result.ok:
        content = result.output["answer"]
    else:  # what arrived stays, under the error
        content = answer_preview(buffer.snapshot()[1])
    _answer_save(actor=actor, case=case, answer=answer, content=content, result=result, window=window,
                 budget=budget_for(provider.capabilities().context_tokens, agent.max_tokens))
    return True


HEARTBEAT_SECONDS = 10


def _follow(future: concurrent.futures.Future, buffer: AnswerBuffer, answer: ChatMessage):
    """Wait for the answer, writing what has arrived into the message every
    CHAT_STREAM_WRITE_SECONDS while it grows (this thread writes; the event loop only records),
    and at least every HEARTBEAT_SECONDS while it does not (a slow model, retries), so that
    only a dead worker's answer goes stale."""
    seen, written = 0, time.monotonic()
    while True:
        try:
            return future.result(timeout=settings.CHAT_STREAM_WRITE_SECONDS)
        except concurrent.futures.TimeoutError:
            version, text, tools = buffer.snapshot()
            if version == seen and time.monotonic() - written < HEARTBEAT_SECONDS:
                continue
            fields = {"updated_at": timezone.now()}
            if version != seen:
                fields |= {"content": answer_preview(text),
                           "tool_calls": [{"name": name, "success": True, "running": True} for name in tools]}
            seen, written = version, time.monotonic()
            ChatMessage.objects.filter(pk=answer.pk, status=ChatMessage.Status.ANSWERING).update(**fields)


def messages_resend_lost(*, send: Callable[[int], object], now=None, limit: int = 200) -> int:
    """Send again, to a worker, each answer with no progress for CHAT_RESEND_AFTER_SECONDS
    (its task was lost with the broker's queue, or its worker died), asked within the last
    CHAT_RESEND_WITHIN_SECONDS; returns how many. Each is released (no worker's claim) and
    touched, conditionally, so that one sweep re-sends it once and the page does not fail it
    as stale meanwhile. A live worker touches its answer every HEARTBEAT_SECONDS: never re-sent.

    `send(message_id)` queues one answer's task (agents.chat.tasks, which calls this sweep:
    handed in, so this module does not import the tasks)."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.CHAT_RESEND_AFTER_SECONDS)
    ids = list(ChatMessage.objects.filter(
        status=ChatMessage.Status.ANSWERING, updated_at__lte=cutoff,
        created_at__gte=now - timedelta(seconds=settings.CHAT_RESEND_WITHIN_SECONDS),
    ).order_by("updated_at", "pk").values_list("pk", flat=True)[:limit])
    sent = 0
    for pk in ids:
        released = ChatMessage.objects.filter(pk=pk, status=ChatMessage.Status.ANSWERING,
                                              updated_at__lte=cutoff).update(started_at=None, updated_at=now)
        if not released:
            continue  # answered, or taken by its worker, meanwhile
        logger.warning("Re-sending chat answer %s: no progress for %s s (its task was lost or its worker died).",
                       pk, settings.CHAT_RESEND_AFTER_SECONDS)
        send(pk)
        sent += 1
    return sent


def _trace_parent(conversation: Conversation):
    """A remote parent in the conversation's trace, so that every answer's spans join it."""
    parent = otel_trace.SpanContext(trace_id=int(conversation.trace_id, 16), span_id=secrets.randbits(63) or 1,
                                    is_remote=True, trace_flags=otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED))
    return otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(parent))


@transaction.atomic
def _answer_save(*, actor, case, answer: ChatMessage, content: str, result, window: int, budget: int) -> None:
    fields = dict(
        content=content, provider=result.provider, model=result.model, input_tokens=result.input_tokens,
        output_tokens=result.output_tokens, window_tokens=window, budget_tokens=max(0, budget),
        context_events=result.context_events,
        tool_calls=[{k: tc[k] for k in ("name", "arguments", "success", "error_type")} for tc in result.tool_calls],
        error=result.error, trace_id=result.trace_id, latency_ms=result.latency_ms,
        status=ChatMessage.Status.DONE if result.ok else ChatMessage.Status.FAILED, updated_at=timezone.now())
    # Only an answer still answering is finished here: one already failed as stale stays so.
    if not ChatMessage.objects.filter(pk=answer.pk, status=ChatMessage.Status.ANSWERING).update(**fields):
        return
    audit_record(actor=f"agent:{result.agent_id}", action="conversation.answered" if result.ok else
                 "conversation.failed", case=case, obj=answer,
                 data={"conversation": answer.conversation_id, "asked_by": actor.get_username(),
                       "answer": content[:1000], "provider": result.provider, "model": result.model,
                       "tools": [t["name"] for t in fields["tool_calls"]], "context_events": len(result.context_events),
                       "error": result.error, "error_type": result.error_type})
