"""Failures injected on purpose, for the demo and the tests only (set through a run's
initial_state safeguards by casework.transactions.demo; never reachable from the API).

- fail_after_steps=N: the planner raises an ordinary error after N planner steps; the run
  fails and the investigation is FAILED (the path a real error takes).
- kill_after_steps=N: the planner raises SimulatedCrash, which nothing catches, like a
  SIGKILL: the run stays `running` and the investigation IN_PROGRESS until the sweeper
  re-delivers the run (RUN_STALE_AFTER_SECONDS later) and a worker resumes it from its last
  saved step. It fires only inside `crashes_allowed()` (the demo loader's own process), so
  a worker never dies of it and the resume finishes.
- simulated_tool_seconds=S: each tool the investigation has run counts S seconds more
  against its timeout, as if the tools were slow. With investigation_timeout_seconds=T the
  investigation times out after ceil(T / S) tools on a fast machine and on a slow one
  alike (a slow one only adds real seconds), keeping what those tools found.
"""

from __future__ import annotations

import contextlib
import contextvars

_ALLOWED = contextvars.ContextVar("txn_simulated_crash_allowed", default=False)


@contextlib.contextmanager
def crashes_allowed():
    token = _ALLOWED.set(True)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def crash_allowed() -> bool:
    return _ALLOWED.get()


def simulated_seconds(inv: dict) -> float:
    """Seconds the injected slowness adds to the investigation's elapsed time."""
    per_tool = float(inv["safeguards"].get("simulated_tool_seconds") or 0)
    return per_tool * len(inv["completed_steps"])


class InjectedFailure(RuntimeError):
    """An ordinary failure raised on purpose: the run fails as with a real error, and the
    worker logs one line instead of a traceback (`expected`)."""

    expected = True


class SimulatedCrash(BaseException):
    """Stands for a worker killed mid-run: not an Exception, so no handler on the way catches it."""
