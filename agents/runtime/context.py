"""Context window management (seed 004, section 3).

Budget: the model's context size, less the response's max_tokens, less a 10% safety
margin for estimation error. The system prompt and the first user message (the task and
its data) are always kept. Two strategies:
- truncation: drop the oldest remaining messages until the rest fits;
- summarise: replace the oldest messages with one summary message written by the model
  (a callable given here), falling back to truncation if that still does not fit.
An assistant message that asked for tools and the tool results answering it are dropped
together, never split. Every pruning is returned as an event, to be recorded, and logged.
Each call is a `context.window` span: the window, the budget, the tokens and messages before
and after, how many were pruned (a summary request, when there is one, hangs under it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from agents.llm.base import Message
from agents.llm.tokens import estimate_messages_tokens
from audit.tracing import get_tracer

logger = logging.getLogger(__name__)

SAFETY_MARGIN = 0.10


@dataclass
class ContextEvent:
    strategy: str
    removed_messages: int
    tokens_before: int
    tokens_after: int
    budget: int

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def budget_for(context_tokens: int, max_tokens: int) -> int:
    return int((context_tokens - max_tokens) * (1 - SAFETY_MARGIN))


def _groups(messages: list[Message]) -> list[list[Message]]:
    """Messages grouped so that tool calls stay with their results."""
    groups: list[list[Message]] = []
    for m in messages:
        if m.role == "tool" and groups and (groups[-1][0].tool_calls):
            groups[-1].append(m)
        else:
            groups.append([m])
    return groups


def manage_context(
    messages: list[Message],
    *,
    context_tokens: int,
    max_tokens: int,
    strategy: str = "truncate",
    summarise: Callable[[list[Message]], str] | None = None,
) -> tuple[list[Message], list[ContextEvent]]:
    budget = budget_for(context_tokens, max_tokens)
    with get_tracer().start_as_current_span("context.window") as span:
        before = estimate_messages_tokens(messages)
        span.set_attributes({"context.strategy": strategy, "context.window_tokens": context_tokens,
                             "context.budget": budget, "context.tokens_before": before,
                             "context.messages_before": len(messages)})
        if before <= budget:
            kept, events, after = messages, [], before
        else:
            kept, events = _prune(messages, budget, before, strategy, summarise)
            after = events[-1].tokens_after
        span.set_attributes({"context.tokens_after": after, "context.messages_after": len(kept),
                             "context.messages_pruned": sum(e.removed_messages for e in events),
                             "context.pruned": bool(events)})
        for event in events:
            logger.info("Context window pruned (%s): %d messages removed, %d -> %d tokens, budget %d",
                        event.strategy, event.removed_messages, event.tokens_before, event.tokens_after, event.budget,
                        extra={"event": "context.pruned", "strategy": event.strategy,
                               "removed_messages": event.removed_messages, "tokens_before": event.tokens_before,
                               "tokens_after": event.tokens_after, "budget": event.budget})
    return kept, events


def _prune(messages: list[Message], budget: int, before: int, strategy: str,
           summarise: Callable[[list[Message]], str] | None) -> tuple[list[Message], list[ContextEvent]]:
    head = [m for m in messages[:2] if m.role in ("system", "user")]
    rest = _groups(messages[len(head):])
    events: list[ContextEvent] = []
    if strategy == "summarise" and summarise is not None and len(rest) > 2:
        # Summarise the older half, keep the newer half verbatim.
        cut = max(1, len(rest) // 2)
        old = [m for g in rest[:cut] for m in g]
        summary = Message(role="user", content=f"Summary of the earlier conversation:\n{summarise(old)}")
        candidate = head + [summary] + [m for g in rest[cut:] for m in g]
        after = estimate_messages_tokens(candidate)
        events.append(ContextEvent("summarise", len(old), before, after, budget))
        if after <= budget:
            return candidate, events
        messages, before, head, rest = candidate, after, head + [summary], rest[cut:]
    removed = 0
    while rest and estimate_messages_tokens(head + [m for g in rest for m in g]) > budget:
        removed += len(rest.pop(0))
    kept = head + [m for g in rest for m in g]
    events.append(ContextEvent("truncate", removed, before, estimate_messages_tokens(kept), budget))
    return kept, events
