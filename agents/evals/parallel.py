"""Repeats in parallel, bounded: the repeats of a suite shared out over `workers` processes.

A scenario empties its database first and swaps the process's provider and tools for its
faults, so two scenarios cannot share a process or a database. Each worker is a fresh
process (spawned: no database connection or thread pool is inherited), sets Django up, makes
its own throwaway database (agents.evals.isolation names it by process id) and runs its share
of the repeats; the attempts come back as plain dicts. The worker count is bounded by the
machine's cores and by the number of repeats.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os

from agents.evals.schema import Scenario


def bounded(workers: int, repeat: int) -> int:
    return max(1, min(workers, repeat, os.cpu_count() or 1))


def run_shares(suite: str, scenarios: list[Scenario], *, repeat: int, workers: int) -> list[dict]:
    workers = bounded(workers, repeat)
    shares = [repeat // workers + (1 if i < repeat % workers else 0) for i in range(workers)]
    payload = [s.model_dump() for s in scenarios]
    context = multiprocessing.get_context("spawn")
    attempts: list[dict] = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for result in pool.map(_share, [suite] * workers, [payload] * workers, shares):
            attempts.extend(result)
    return attempts


def _share(suite: str, payload: list[dict], times: int) -> list[dict]:
    import django

    django.setup()
    from agents.evals.attempt import run_attempt
    from agents.evals.isolation import evaluation_database, flush_evaluation_database
    from agents.evals.judge import Judge

    scenarios = [Scenario.model_validate(data) for data in payload]
    judge = Judge.from_settings()
    with evaluation_database():
        return [run_attempt(suite, scenario, reset=flush_evaluation_database, judge=judge)
                for scenario in scenarios for _ in range(times)]
