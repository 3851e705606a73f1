"""Coalesced wake-ups for the rule evaluation: under a stream of one-transaction requests
(POST /api/transactions/decide, single ingests) one message per transaction costs each
request a broker round trip and the worker one evaluation per transaction. Instead each
process keeps the ids committed in the last TXN_EVALUATE_COALESCE_MS and one daemon thread
sends them as one `monitoring_evaluate` message (at most CHUNK ids each).

The database stays the truth: ids lost with a process that dies before sending are
unevaluated rows, which the beat sweep (`monitoring_evaluate_pending`) evaluates after a
few seconds, as it does for any lost message. With TXN_EVALUATE_COALESCE_MS=0, or Celery
eager (the tests), each commit sends its own message at once, as before."""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable

from django.conf import settings

logger = logging.getLogger(__name__)


class _Coalescer:
    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._cond = threading.Condition()
        self._ids: list[int] = []
        self._send: Callable[[list[int]], object] = lambda ids: None
        self._chunk = 1000
        self._pid = 0
        self._thread: threading.Thread | None = None

    def add(self, ids: list[int], send: Callable[[list[int]], object], chunk: int) -> None:
        self._send, self._chunk = send, chunk
        self._ensure_thread()
        with self._cond:
            self._ids.extend(ids)
            self._cond.notify()

    def _alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._pid == os.getpid()

    def _ensure_thread(self) -> None:
        if self._alive():
            return
        with self._guard:
            if self._alive():
                return
            # A forked child inherits the parent's objects but not its thread: start afresh.
            self._pid = os.getpid()
            self._cond = threading.Condition()
            self._ids = []
            self._thread = threading.Thread(target=self._loop, name="txn-evaluate-wake", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._ids:
                    self._cond.wait()
            time.sleep(settings.TXN_EVALUATE_COALESCE_MS / 1000)  # let the next commits join this message
            self.flush()

    def flush(self) -> None:
        with self._cond:
            ids, self._ids = self._ids, []
        for start in range(0, len(ids), self._chunk):
            try:
                self._send(ids[start:start + self._chunk])
            except Exception:  # noqa: BLE001 - the sweep evaluates them
                logger.warning("Could not enqueue rule evaluation; the sweep will run it.", exc_info=True)


_coalescer = _Coalescer()
atexit.register(_coalescer.flush)


def evaluation_wake(ids: list[int], *, send: Callable[[list[int]], object], chunk: int) -> None:
    """Called on commit with the transactions just stored; `send` enqueues one evaluation of
    at most `chunk` ids (monitoring_evaluate.delay)."""
    if settings.TXN_EVALUATE_COALESCE_MS <= 0 or settings.CELERY_TASK_ALWAYS_EAGER:
        try:
            send(ids)
        except Exception:  # noqa: BLE001 - the sweep evaluates them
            logger.warning("Could not enqueue rule evaluation; the sweep will run it.", exc_info=True)
        return
    _coalescer.add(ids, send, chunk)
