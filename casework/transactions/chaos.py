"""Failures injected on purpose, for the demo and the tests only (set through a run's
initial_state safeguards by casework.transactions.demo; never reachable from the API).

- fail_after_steps=N: the planner raises an ordinary error after N planner steps; the run
  fails and the investigation is FAILED (the path a real error takes).
- kill_after_steps=N: the planner raises SimulatedCrash, which nothing catches, like a
  SIGKILL: the run stays `running` and the investigation IN_PROGRESS until the sweeper
  re-delivers the run (RUN_STALE_AFTER_SECONDS later) and a worker resumes it from its last
  saved step. It fires only in the execution that prepared the run, so the resume finishes.
"""

from __future__ import annotations


class SimulatedCrash(BaseException):
    """Stands for a worker killed mid-run: not an Exception, so no handler on the way catches it."""
