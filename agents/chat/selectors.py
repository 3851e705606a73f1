"""Reads for the conversation panel: get_history and get_context (seed 004)."""

from __future__ import annotations

from agents.chat.models import ChatMessage, Conversation


def conversation_current(*, user, case) -> Conversation | None:
    return Conversation.objects.filter(case=case, user=user, is_open=True).first()


def conversation_history(conversation: Conversation | None, limit: int | None = None) -> list[ChatMessage]:
    if conversation is None:
        return []
    messages = list(conversation.messages.order_by("-id")[:limit] if limit else conversation.messages.order_by("-id"))
    return messages[::-1]


def conversation_info(conversation: Conversation | None, history: list[ChatMessage]) -> dict:
    """get_context: message count, tokens in the window and the budget, provider, prunings,
    tool calls, and the answers' traces."""
    answers = [m for m in history if m.role == ChatMessage.Role.ASSISTANT]
    finished = [m for m in answers if m.status != ChatMessage.Status.ANSWERING]
    last = finished[-1] if finished else None
    return {
        "conversation": conversation, "message_count": len(history),
        "window_tokens": last.window_tokens if last else 0, "budget_tokens": last.budget_tokens if last else 0,
        "provider": last.provider if last else "", "model": last.model if last else "",
        "context_events": [dict(e, answer=m.pk) for m in answers for e in m.context_events],
        "tool_calls": sum(len(m.tool_calls) for m in answers),
        "input_tokens": sum(m.input_tokens for m in answers), "output_tokens": sum(m.output_tokens for m in answers),
    }
