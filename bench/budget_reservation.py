"""Budgets per case (issue 46): what the reservation costs per model call, and the throughput of
offline-provider calls with budgets on against off. Run by hand, on PostgreSQL:

    .venv/bin/python bench/budget_reservation.py [--database-url URL] [--calls 20000] [--runs 200]
        [--concurrency 64] [--repeats 5] [--samples 2000] [--lease-calls N] [--lease-max-calls N] [--write-readme]

It creates its database (default casework_budget_bench on 127.0.0.1:5432) if missing and
migrates it, then measures:

(a) the ledger's statements on this process's connection, --samples each, one case: reserve
    (the conditional UPDATE), settle (the UPDATE exchanging it for the real usage), release;
    and the path a call takes through the chokepoint (agents.runtime.charging: reserve and
    settle on the budget pool, awaited from the event loop), per call, one call at a time.
(b) --calls offline-provider calls of one agent on the runtime's event loop, --concurrency in
    flight (as many callers, each giving the loop a turn between its calls, as a real provider's
    call does while it waits), charged to one of 50 cases each, budgets on against off: calls/s
    and CPU per call (the process's and the event loop thread's), --repeats interleaved trials
    each (on, off, off, on ...), median; and the writer's statements, counted.
(c) the same calls as the product makes them: --runs pipeline runs of six offline agents in
    one step (the fraud pipeline's shape), run by `execute_run` (AgentCall rows, audit entries,
    the run's state written per step), budgets on against off, interleaved, median.

The offline provider prices its model here (1 and 2 US$ per million tokens) so that every call
reserves money as well as tokens; budgets are large enough never to refuse.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PRICES = {"offline": {"offline-rules-v1": [1.0, 2.0]}}


def setup_django(database_url: str, var_dir: str) -> None:
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret",
        "FIELD_ENCRYPTION_KEYS": "YmVuY2gtb25seS1maWVsZC1rZXktbm90LWZvci1wcm8=", "VAR_DIR": var_dir,
        "LLM_PROVIDER": "offline", "DEBUG": "false", "DATABASE_URL": database_url, "AUDIT_SEQUENCER": "inline",
        "CELERY_TASK_ALWAYS_EAGER": "false", "LLM_MAX_CONCURRENCY": "64", "CASE_BUDGETS_ENABLED": "true",
    })
    for name in ("PROMETHEUS_MULTIPROC_DIR", "OTEL_EXPORTER_OTLP_ENDPOINT", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def ensure_database(url: str) -> None:
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def make_cases(n: int, big: str) -> list:
    from casework.budgets.models import CaseBudget
    from casework.cases.services import case_create

    cases = [case_create(actor="system", case_type="fraud_alert", title=f"Budget bench {i}") for i in range(n)]
    for case in cases:
        CaseBudget.objects.update_or_create(case=case, defaults={
            "case_type": case.case_type, "limit_musd": int(float(big) * 1_000_000), "limit_tokens": None,
            "spent_musd": 0, "spent_tokens": 0, "reserved_musd": 0, "reserved_tokens": 0})
    return cases


# --- (a) the statements -------------------------------------------------------------------------


def measure_statements(case, samples: int) -> dict:
    from agents.llm.base import Completion, LLMRequest, Message
    from agents.runtime import aio, charging
    from agents.runtime.charging import ReserveRequest, Settlement
    from casework.budgets.ledger import BudgetCharger

    charger = BudgetCharger()
    charger.connection_prepare()  # as the writer's connection: commits without waiting for the flush
    request_one = ReserveRequest(case=case.reference, provider="offline", model="offline-rules-v1",
                                 input_tokens=800, max_output_tokens=1024)
    timings: dict[str, list[float]] = {"reserve": [], "settle": [], "release": [], "chokepoint": [], "leased": []}
    for _ in range(samples // 10):  # warm the connection and the server's plan cache
        (reservation,) = charger.reserve_many([request_one])
        charger.settle_many([Settlement(reservation, "offline", "offline-rules-v1", 800, 300)])
    for i in range(samples):
        started = time.perf_counter()
        (reservation,) = charger.reserve_many([request_one])
        reserved = time.perf_counter()
        if i % 2:
            charger.settle_many([Settlement(reservation, "offline", "offline-rules-v1", 800, 300)])
            timings["settle"].append(time.perf_counter() - reserved)
        else:
            charger.settle_many([Settlement(reservation, released=True)])
            timings["release"].append(time.perf_counter() - reserved)
        timings["reserve"].append(reserved - started)

    class Model:
        name, model = "offline", "offline-rules-v1"

    request = LLMRequest(messages=[Message("system", "You are an analyst. " * 40), Message("user", "x " * 400)],
                         max_tokens=1024)
    answer = Completion(text="{}", input_tokens=800, output_tokens=300, model="offline-rules-v1")

    async def one() -> float:
        started = time.perf_counter()
        reservation = await charging.areserve(case.reference, Model, request)
        await charging.asettle(reservation, Model, answer)
        return time.perf_counter() - started

    def timed_one() -> float:
        took = aio.run(one())
        charging.flush()  # its settlement written before the next call: one call at a time
        return took

    for _ in range(samples // 10):
        timed_one()
    timings["chokepoint"] = [timed_one() for _ in range(samples)]
    # Calls one after the other with no flush between: with leases on (CASE_BUDGET_LEASE_CALLS),
    # most are handed out of the case's lease in memory; a statement every lease's worth of calls.
    timings["leased"] = [aio.run(one()) for _ in range(samples)]
    charging.flush()
    return {name: (statistics.median(v) * 1e6, percentile(v, 0.95) * 1e6) for name, v in timings.items()}


# --- (b) calls on the loop ---------------------------------------------------------------------


def bench_agent():
    from pydantic import BaseModel

    from agents.llm.offline_registry import OFFLINE_ANALYSTS
    from agents.runtime.agent import Agent

    class Note(BaseModel):
        note: str
        score: int

    OFFLINE_ANALYSTS.setdefault("bench_budget", lambda data: {"note": f"{len(data['facts'])} facts", "score": 3})
    return Agent(id="bench_budget", system_prompt="You are an analyst. Read the facts and score them. " * 6,
                 output_model=Note)


def calls_trial(agent, cases, calls: int, concurrency: int, on: bool) -> float:
    from django.conf import settings

    from agents.runtime import aio
    from agents.runtime.runner import arun_agent

    settings.CASE_BUDGETS_ENABLED = on
    facts = {"facts": [{"amount": 120 + i, "merchant": f"shop {i}", "country": "NL"} for i in range(12)]}

    async def all_calls() -> int:
        # `concurrency` callers, each making the next call when its last one is answered, and
        # giving the loop a turn between two calls, as a call to a real provider does while it
        # waits for the answer (an offline call never waits: without the turn one caller would
        # make every call in one step, and nothing else on the loop, such as the budget's
        # writer, would run until a call waited). Not 3,000 tasks behind a semaphore: once any
        # call waited there, asyncio's Semaphore woke its waiters one loop turn at a time and
        # scanned the woken ones at every release, a cost of the harness that only trials with
        # budgets paid (their first calls wait for the writer; without budgets none ever waits).
        numbers = iter(range(calls))
        results = []

        async def caller() -> None:
            for i in numbers:
                results.append(await arun_agent(agent, facts, metadata={"case": cases[i % len(cases)].reference}))
                await asyncio.sleep(0)

        await asyncio.gather(*(caller() for _ in range(concurrency)))
        failed = [r.error for r in results if r.error]
        if failed:
            raise SystemExit(f"{len(failed)} calls failed: {failed[0]}")
        return len(results)

    started, cpu, loop_cpu = time.perf_counter(), time.process_time(), loop_thread_time()
    done = aio.run(all_calls())
    from agents.runtime import charging

    charging.flush()  # the trial's settlements are its cost too
    return (done / (time.perf_counter() - started), (time.process_time() - cpu) / done * 1e6,
            (loop_thread_time() - loop_cpu) / done * 1e6)


def loop_thread_time() -> float:
    """The CPU time of the runtime's event loop thread, where the calls and the budget's writer
    run: steadier than the process's (which also has the span exporter's thread, busy when it
    pleases) on a shared machine."""
    from agents.runtime import aio

    async def now() -> float:
        return time.thread_time()

    return aio.run(now())


# --- (c) calls inside pipeline runs ---------------------------------------------------------------


def runs_trial(agent, cases, runs: int, on: bool) -> float:
    """Runs executed from 8 threads (a worker's), six calls each; calls/s."""
    import concurrent.futures

    from django.conf import settings
    from django.db import connection, transaction

    from agents.runtime.pipeline import CallSpec, Pipeline, Stage, execute_run, register_pipeline
    from agents.tasks import pipeline_enqueue

    settings.CASE_BUDGETS_ENABLED = on
    if "bench_budget_six" not in __import__("agents.runtime.pipeline", fromlist=["PIPELINES"]).PIPELINES:
        facts = {"facts": [{"amount": 120 + i, "merchant": f"shop {i}", "country": "NL"} for i in range(12)]}
        register_pipeline(Pipeline(name="bench_budget_six", modes={"full": [
            Stage("six", lambda ctx: [CallSpec(f"a{i}", agent, facts) for i in range(6)])]}))
    from agents.tasks import run_pipeline

    run_pipeline.delay = lambda run_id: None  # this script executes the runs itself
    with transaction.atomic():
        ids = [pipeline_enqueue(case=cases[i % len(cases)], pipeline="bench_budget_six", mode="full").pk
               for i in range(runs)]

    def execute(run_id: int) -> None:
        try:
            execute_run(run_id)
        finally:
            connection.close()

    started, cpu, loop_cpu = time.perf_counter(), time.process_time(), loop_thread_time()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(execute, ids))
    from agents.runtime import charging

    charging.flush()
    elapsed, cpu, loop_cpu = time.perf_counter() - started, time.process_time() - cpu, loop_thread_time() - loop_cpu
    from agents.models import AgentRun

    done = AgentRun.objects.filter(pk__in=ids, status="completed").count()
    if done != runs:
        raise SystemExit(f"only {done} of {runs} runs completed")
    return 6 * runs / elapsed, cpu / (6 * runs) * 1e6, loop_cpu / (6 * runs) * 1e6


def interleaved(trial, repeats: int) -> dict[bool, list[tuple]]:
    """(calls/s, this process's CPU µs per call, the loop thread's, statements) of each trial,
    budgets on and off."""
    results: dict[bool, list[tuple]] = {True: [], False: []}
    trial(False)  # warm-up
    for i in range(repeats):
        for on in ((True, False) if i % 2 == 0 else (False, True)):
            with Counted() as counted:
                measured = trial(on)
            results[on].append((*measured, counted))
    return results


class Counted:
    """What the budget's writer sent during a trial (agents.runtime.charging's loop writer, through
    the charger's methods, wrapped here): reservation statements, the calls that waited in them
    (a call handed out of a lease waits for none), the lease refills written, and settlement
    statements."""

    def __enter__(self):
        from casework.budgets.ledger import BudgetCharger

        self.waited = self.reserving = self.refills = self.settling = 0
        self.saved = {name: getattr(BudgetCharger, name) for name in ("areserve_leasing", "areserve_many",
                                                                       "asettle_many")}
        leasing, many, settle = self.saved.values()
        counted = self

        async def areserve_leasing(self, conn, requests, before_fallback, lease_calls, *refills):
            counted.reserving += 1
            counted.waited += len(requests)
            counted.refills += len(refills[0]) if refills else 0
            counted.inside = True  # its fallback (areserve_many) is the same statement's
            try:
                return await leasing(self, conn, requests, before_fallback, lease_calls, *refills)
            finally:
                counted.inside = False

        async def areserve_many(self, conn, requests, before_fallback):
            if not counted.inside:
                counted.reserving += 1
                counted.waited += len(requests)
            return await many(self, conn, requests, before_fallback)

        async def asettle_many(self, conn, settlements):
            counted.settling += 1
            return await settle(self, conn, settlements)

        self.inside = False
        BudgetCharger.areserve_leasing, BudgetCharger.areserve_many = areserve_leasing, areserve_many
        BudgetCharger.asettle_many = asettle_many
        return self

    def __exit__(self, *exc) -> None:
        from casework.budgets.ledger import BudgetCharger

        for name, method in self.saved.items():
            setattr(BudgetCharger, name, method)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/casework_budget_bench")
    parser.add_argument("--samples", type=int, default=2000)
    # 20,000: a trial of 3,000 lasted half a second, and a full collection of the collector
    # (about 100 ms in this process) fell in one trial of two or three, deciding the comparison.
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lease-calls", type=int, default=None,
                        help="CASE_BUDGET_LEASE_CALLS for the run (default: the setting's, 16; 0: no leases)")
    parser.add_argument("--lease-max-calls", type=int, default=None,
                        help="CASE_BUDGET_LEASE_MAX_CALLS for the run (default: the setting's, 32): the "
                             "largest a lease grows to by its refills")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    if args.lease_calls is not None:
        os.environ["CASE_BUDGET_LEASE_CALLS"] = str(args.lease_calls)
    if args.lease_max_calls is not None:
        os.environ["CASE_BUDGET_LEASE_MAX_CALLS"] = str(args.lease_max_calls)

    ensure_database(args.database_url)
    var_dir = str(REPO / "var" / "bench-budgets")
    Path(var_dir).mkdir(parents=True, exist_ok=True)
    setup_django(args.database_url, var_dir)
    from django.conf import settings
    from django.db import connection

    settings.LLM_PRICES = PRICES
    load_before = os.getloadavg()
    cases = make_cases(50, "1000000")
    statements = measure_statements(cases[0], args.samples)
    agent = bench_agent()
    calls = interleaved(lambda on: calls_trial(agent, cases, args.calls, args.concurrency, on), args.repeats)
    runs = interleaved(lambda on: runs_trial(agent, cases, args.runs, on), args.repeats)
    load_after = os.getloadavg()

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = cursor.fetchone()[0].split()[0]
        cursor.execute("SHOW synchronous_commit")
        sync = cursor.fetchone()[0]
    lines = [
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Machine: {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, PostgreSQL {pg} on the same machine (synchronous_commit={sync}); "
        f"load average (1 / 5 / 15 min) {' / '.join(f'{x:.1f}' for x in load_before)} before, "
        f"{' / '.join(f'{x:.1f}' for x in load_after)} after.",
        "",
        f"(a) The reservation's statements, {args.samples} samples each, one case (µs); the first three "
        "on Django's connection (the statements the SQLite writer sends), the last through the chokepoint:",
        "",
        "| statement | median µs | p95 µs |",
        "|---|---|---|",
    ]
    names = {"reserve": "reserve: the conditional UPDATE ... RETURNING, one call (autocommit)",
             "settle": "settle: the UPDATE exchanging it for the real usage",
             "release": "release: a failed call's reservation given back",
             "chokepoint": "one call's reservation awaited through agents.runtime.charging (the writer on "
                           "the event loop, psycopg's async connection; its settlement queued), everything "
                           "written between calls (so no lease is held)",
             "leased": f"the same, calls one after another without a flush between (leases: "
                       f"CASE_BUDGET_LEASE_CALLS={settings.CASE_BUDGET_LEASE_CALLS})"}
    for key, label in names.items():
        median, p95 = statements[key]
        lines.append(f"| {label} | {median:.0f} | {p95:.0f} |")

    def row(label: str, results: dict[bool, list[tuple]], calls_per_trial: int) -> str:
        def median(k: bool, i: int) -> float:
            return statistics.median(r[i] for r in results[k])

        (off, on), (cpu_off, cpu_on), (loop_off, loop_on) = ((median(False, i), median(True, i)) for i in range(3))
        counts = [r[3] for r in results[True]]
        return (f"| {label} | {off:,.0f} | {on:,.0f} | {100 * (on - off) / off:+.1f}% | "
                f"{cpu_off:,.0f} → {cpu_on:,.0f} ({cpu_on - cpu_off:+,.0f}) | "
                f"{loop_off:,.0f} → {loop_on:,.0f} ({loop_on - loop_off:+,.0f}) | "
                f"{statistics.median(c.waited for c in counts):,.0f} of {calls_per_trial:,} | "
                f"{statistics.median(c.reserving for c in counts):,.0f}, "
                f"{statistics.median(c.refills for c in counts):,.0f}, "
                f"{statistics.median(c.settling for c in counts):,.0f} | "
                f"{', '.join(f'{r[0]:,.0f}' for r in results[False])} / "
                f"{', '.join(f'{r[0]:,.0f}' for r in results[True])} |")

    lines += [
        "",
        f"(b), (c) Throughput (calls/s) and CPU per call (µs; this process's, and its event loop "
        f"thread's, where the calls and the budget's writer run; the database server's is in "
        f"neither), median of {args.repeats} interleaved trials each, budgets off and on "
        f"(CASE_BUDGET_LEASE_CALLS={settings.CASE_BUDGET_LEASE_CALLS}, "
        f"CASE_BUDGET_LEASE_MAX_CALLS={settings.CASE_BUDGET_LEASE_MAX_CALLS}); and per trial with "
        f"budgets on (median), the calls that waited for the writer's statement, and the writer's "
        f"statements (reservations, lease refills written in them, settlements):",
        "",
        "| calls | calls/s off | calls/s on | on against off | CPU µs/call, process: off → on | "
        "loop thread: off → on | calls that waited | reservation statements, refills, settlement "
        "statements | trials, calls/s (off / on) |",
        "|---|---|---|---|---|---|---|---|---|",
        row(f"(b) {args.calls:,} offline calls on the event loop, {args.concurrency} in flight", calls,
            args.calls),
        row(f"(c) {args.runs} pipeline runs of 6 offline calls (execute_run from 8 threads)", runs, 6 * args.runs),
    ]
    text = "\n".join(lines)
    print(text)
    if args.write_readme:
        sys.path.insert(0, str(REPO / "bench"))
        from readme_block import write_block

        write_block("budget_reservation", text)


if __name__ == "__main__":
    main()
