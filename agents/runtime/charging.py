"""Charging a case for its model calls: the hook the runtime calls around every provider
request (runner._Call.complete, the one place every call goes through).

Before a call is sent, its estimated cost (prompt tokens counted, plus the agent's max output
tokens, at the model's price) is reserved against the case named in the call's metadata
(`case`: the pipeline executor and "Ask the agent" both name it); after, the reservation is
settled with the real usage, or released when the call failed. A refused reservation raises
BudgetReached, and the call is never sent.

The runtime knows no budgets: the case layer registers a Charger (casework/budgets, from its
AppConfig.ready). With none registered, or CASE_BUDGETS_ENABLED off, nothing is charged.

The charger's work is database statements, which Django refuses on the event loop's thread:
they run on a small pool of their own whose threads keep their connections (one short
autocommit UPDATE each; aio.in_thread's pool closes its connection after every job, and a new
PostgreSQL connection per call would cost more than the call).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import threading
from typing import Any, Protocol

from django.conf import settings

from agents.llm.base import Completion, LLMRequest, Provider
from agents.llm.tokens import estimate_messages_tokens, estimate_text_tokens


class Charger(Protocol):
    def reserve(self, *, case: str, provider: str, model: str, input_tokens: int,
                max_output_tokens: int) -> Any | None:
        """A reservation (settled or released later), None when nothing is charged; raises
        agents.llm.errors.BudgetReached to refuse the call."""

    def settle(self, reservation: Any, *, provider: str, model: str, input_tokens: int, output_tokens: int) -> None: ...

    def release(self, reservation: Any) -> None: ...


_charger: Charger | None = None
_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None


def charger_register(charger: Charger | None) -> None:
    global _charger
    _charger = charger


def charging_on() -> bool:
    return _charger is not None and settings.CASE_BUDGETS_ENABLED


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = concurrent.futures.ThreadPoolExecutor(max_workers=settings.CASE_BUDGET_DB_THREADS,
                                                              thread_name_prefix="budget")
    return _pool


def pool_shutdown() -> None:
    """Close the pool's database connections and its threads (tests, before their database
    goes; a worker's end)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is None:
        return

    size = pool._max_workers  # noqa: SLF001 - the pool's own size, whatever the setting is now
    # One close per thread: each job waits for all the others to start, so no thread takes two.
    barrier = threading.Barrier(size)

    def close() -> None:
        from django.db import connection

        try:
            barrier.wait(timeout=10)
        finally:
            connection.close()

    for future in [pool.submit(close) for _ in range(size)]:
        future.result()
    pool.shutdown(wait=True)


def _fresh(fn, *args, **kwargs):
    """Run `fn` with this thread's connection, dropped first if it is too old or broken (as
    Django does at a request's start), and retried once on a new one if it broke meanwhile."""
    from django.db import InterfaceError, OperationalError, connection

    connection.close_if_unusable_or_obsolete()
    try:
        return fn(*args, **kwargs)
    except (InterfaceError, OperationalError):
        if connection.in_atomic_block:
            raise
        connection.close()
        return fn(*args, **kwargs)


async def _in_pool(fn, *args, **kwargs):
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        _executor(), lambda: context.run(_fresh, fn, *args, **kwargs))


def request_estimate(request: LLMRequest) -> tuple[int, int]:
    """(prompt tokens, most output tokens) of a request: the reservation's size. The prompt is
    counted as agents.llm.tokens counts it (about 8% over on prose), the tools' schemas with it."""
    prompt = estimate_messages_tokens(request.messages)
    if request.tools:
        prompt += sum(estimate_text_tokens(t.name + t.description + json.dumps(t.parameters, sort_keys=True))
                      for t in request.tools)
    return prompt, request.max_tokens


async def areserve(case: str | None, provider: Provider, request: LLMRequest) -> Any | None:
    """Reserve the request's estimate against `case` (a case reference), or None (nothing charged)."""
    if not case or not charging_on():
        return None
    prompt, most = request_estimate(request)
    return await _in_pool(_charger.reserve, case=case, provider=provider.name, model=provider.model or "",
                          input_tokens=prompt, max_output_tokens=most)


async def asettle(reservation: Any | None, provider: Provider, completion: Completion) -> None:
    if reservation is None:
        return
    await _in_pool(_charger.settle, reservation, provider=provider.name,
                   model=completion.model or provider.model or "", input_tokens=completion.input_tokens,
                   output_tokens=completion.output_tokens)


def release_soon(reservation: Any | None) -> concurrent.futures.Future | None:
    """Give the reservation back (the call failed or was cancelled): sent to the pool without
    waiting, so that it happens even when the call's task is being cancelled."""
    if reservation is None:
        return None
    return _executor().submit(contextvars.copy_context().run, _fresh, _charger.release, reservation)
