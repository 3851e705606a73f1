"""One asyncio event loop per process, on a daemon thread, for every LLM request.

Why: a blocking call per thread caps a worker at its thread count and spends most of its CPU
on thread switching; one loop keeps hundreds of requests in flight at the cost of a
coroutine each (DESIGN.md, "Throughput is calls in flight"). Callers stay synchronous
Django code: `submit()` schedules a coroutine on the loop from any thread and returns a
concurrent Future, carrying the caller's context variables (the OpenTelemetry parent span,
the correlation id) into the coroutine.

The loop is started on first use and again after a fork (a prefork child inherits the
parent's loop object but not its thread). Blocking work that a coroutine needs (an SDK
without an async client, an offline analyst that may read the database, a tool handler)
runs on `blocking_pool()`, never on the loop's thread: Django refuses database access from
a thread that runs an event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_pid: int | None = None
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_semaphore: tuple[asyncio.Semaphore, int, asyncio.AbstractEventLoop] | None = None


def get_loop() -> asyncio.AbstractEventLoop:
    global _loop, _pid
    if _loop is not None and _pid == os.getpid() and _loop.is_running():
        return _loop
    with _lock:
        if _loop is None or _pid != os.getpid() or not _loop.is_running():
            loop = asyncio.new_event_loop()
            started = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(started.set)
                loop.run_forever()

            threading.Thread(target=serve, name="llm-loop", daemon=True).start()
            started.wait(timeout=10)
            _loop, _pid = loop, os.getpid()
    return _loop


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run `coro` on the process's loop; cancelling the returned future cancels the task."""
    loop = get_loop()
    context = contextvars.copy_context()
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def start() -> None:
        task = loop.create_task(coro, context=context)
        # The same two-way link asyncio.run_coroutine_threadsafe makes (results and
        # cancellation), but with the caller's context rather than the loop thread's.
        asyncio.futures._chain_future(task, future)  # noqa: SLF001

    loop.call_soon_threadsafe(start)
    return future


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on the loop and wait for it: the synchronous entry point."""
    return submit(coro).result()


def blocking_pool() -> concurrent.futures.ThreadPoolExecutor:
    """Threads for blocking work started from the loop; as many as requests may be in flight."""
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                from django.conf import settings

                _pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=max(8, settings.LLM_MAX_CONCURRENCY), thread_name_prefix="llm-blocking")
    return _pool


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run blocking `fn(*args)` on the pool with the caller's context, closing its DB connection after."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(blocking_pool(), context.run, _closing, fn, *args)


def _closing(fn: Callable[..., T], *args: Any) -> T:
    try:
        return fn(*args)
    finally:
        from django.db import connection

        # Pool threads are reused: a connection opened here is closed, not leaked per thread.
        if connection.connection is not None and not connection.in_atomic_block:
            connection.close()


def llm_slots() -> asyncio.Semaphore:
    """The process-wide bound on LLM requests in flight (LLM_MAX_CONCURRENCY), on the loop."""
    global _semaphore
    from django.conf import settings

    size, loop = settings.LLM_MAX_CONCURRENCY, asyncio.get_running_loop()
    if _semaphore is None or _semaphore[1] != size or _semaphore[2] is not loop:
        _semaphore = (asyncio.Semaphore(size), size, loop)
    return _semaphore[0]
