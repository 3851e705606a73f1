"""Conversations with a case's agent (seed 004's send_message, new_conversation), audited.

message_send: save the question (one transaction), ask the agent outside any transaction (a
model may take seconds), save the answer with what it cost and what the context manager did
(a second transaction). The history sent is the conversation's last CHAT_HISTORY_MESSAGES
messages; the context manager prunes more when the window is small and records it.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from opentelemetry import trace as otel_trace

from agents.chat.assistant import assistant_agent
from agents.chat.context import case_context
from agents.chat.models import ChatMessage, Conversation
from agents.llm.base import Message
from agents.llm.registry import get_provider
from agents.llm.tokens import estimate_messages_tokens
from agents.runtime.context import budget_for
from agents.runtime.prompting import fence_data, system_prompt_for
from agents.runtime.runner import run_tool_loop
from audit.services import audit_record
from audit.tracing import get_tracer

QUESTION_MAX = 4000


@transaction.atomic
def conversation_start(*, actor, case) -> Conversation:
    """new_conversation: close the open one (kept) and start afresh."""
    closed = Conversation.objects.filter(case=case, user=actor, is_open=True).update(is_open=False)
    conversation = Conversation.objects.create(case=case, user=actor)
    audit_record(actor=actor, action="conversation.started", case=case, obj=conversation,
                 data={"closed_previous": bool(closed)})
    return conversation


def conversation_open(*, actor, case) -> Conversation:
    conversation = Conversation.objects.filter(case=case, user=actor, is_open=True).first()
    return conversation or conversation_start(actor=actor, case=case)


@transaction.atomic
def _question_save(*, actor, case, content: str) -> tuple[Conversation, ChatMessage]:
    conversation = Conversation.objects.select_for_update().filter(case=case, user=actor, is_open=True).first()
    conversation = conversation or conversation_start(actor=actor, case=case)
    question = ChatMessage(conversation=conversation, role=ChatMessage.Role.USER, content=content)
    question.full_clean()
    question.save()
    audit_record(actor=actor, action="conversation.asked", case=case, obj=question,
                 data={"conversation": conversation.pk, "question": content[:1000]})
    return conversation, question


def message_send(*, actor, case, content: str) -> ChatMessage:
    """send_message: the question, then the agent's answer (or its error), both saved."""
    content = (content or "").strip()
    if not content:
        raise ValidationError({"content": "Ask a question."})
    if len(content) > QUESTION_MAX:
        raise ValidationError({"content": f"A question is at most {QUESTION_MAX} characters."})
    conversation, question = _question_save(actor=actor, case=case, content=content)
    earlier = list(conversation.messages.exclude(pk=question.pk).filter(error="")
                   .order_by("-id")[:settings.CHAT_HISTORY_MESSAGES])[::-1]
    history = [Message(role=m.role, content=m.content) for m in earlier] + [Message(role="user", content=content)]
    agent = assistant_agent(case.case_type)
    data = case_context(case)
    provider = get_provider()
    with get_tracer().start_as_current_span("conversation.send_message", context=_trace_parent(conversation)) as span:
        span.set_attributes({"conversation.id": conversation.pk, "conversation.message_count": len(history),
                             "case.reference": case.reference, "user": actor.get_username()})
        result = run_tool_loop(agent, data, history=history, max_tool_calls=settings.CHAT_MAX_TOOL_CALLS,
                               context_strategy=settings.CHAT_CONTEXT_STRATEGY,
                               metadata={"case": case.reference, "conversation": str(conversation.pk)})
    window = estimate_messages_tokens([Message("system", system_prompt_for(agent.system_prompt, None)),
                                       Message("user", fence_data(data, label=agent.id)), *history])
    if result.context_events:
        window = result.context_events[-1]["tokens_after"]
    answer_text = result.output["answer"] if result.ok else f"The agent could not answer: {result.error}"
    return _answer_save(actor=actor, case=case, conversation=conversation, content=answer_text, result=result,
                        window=window, budget=budget_for(provider.capabilities().context_tokens, agent.max_tokens))


def _trace_parent(conversation: Conversation):
    """A remote parent in the conversation's trace, so that every answer's spans join it."""
    parent = otel_trace.SpanContext(trace_id=int(conversation.trace_id, 16), span_id=secrets.randbits(63) or 1,
                                    is_remote=True, trace_flags=otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED))
    return otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(parent))


@transaction.atomic
def _answer_save(*, actor, case, conversation, content: str, result, window: int, budget: int) -> ChatMessage:
    answer = ChatMessage(
        conversation=conversation, role=ChatMessage.Role.ASSISTANT, content=content, provider=result.provider,
        model=result.model, input_tokens=result.input_tokens, output_tokens=result.output_tokens,
        window_tokens=window, budget_tokens=max(0, budget), context_events=result.context_events,
        tool_calls=[{k: tc[k] for k in ("name", "arguments", "success", "error_type")} for tc in result.tool_calls],
        error=result.error, trace_id=result.trace_id, latency_ms=result.latency_ms)
    answer.save()
    audit_record(actor=f"agent:{result.agent_id}", action="conversation.answered" if result.ok else
                 "conversation.failed", case=case, obj=answer,
                 data={"conversation": conversation.pk, "asked_by": actor.get_username(), "answer": content[:1000],
                       "provider": result.provider, "model": result.model, "tools": [t["name"] for t in answer.tool_calls],
                       "context_events": len(result.context_events), "error": result.error})
    return answer
