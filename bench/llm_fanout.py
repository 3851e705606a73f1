"""LLM fan-out benchmark: the agent runtime against a fake OpenAI-compatible endpoint that
answers every request after a fixed latency.

    .venv/bin/python bench/llm_fanout.py [--latency 200] [--write-readme]

It starts the fake (tests/fakes/llm_servers.py) in its own process, so that the fake's CPU
work does not share this process's GIL, sets Django up with LLM_PROVIDER=openai pointing at
it and a temporary SQLite database under a temporary VAR_DIR, and measures:

  (a) five independent agents, then one that depends on them: a 2-stage pipeline run by
      agents.runtime.pipeline.execute_run (database writes, audit entries, traces included).
      Wall time should be about two latencies, not six;
  (b) the same six calls as six one-call stages, i.e. sequentially, for comparison;
  (c) the bare `openai` client's ceiling on this machine: N threads sending requests through
      one client, requests per second, beside the ideal N / latency;
  (d) many runs' calls in flight: R pipelines (6 calls each) executed from a pool of R
      threads, LLM calls per second for several values of LLM_MAX_CONCURRENCY.

--write-readme replaces the figures between the llm_fanout markers in bench/README.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from readme_block import README, write_block  # bench/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parents[1]
REPLY = {"finding": "Nothing unusual in the data given.", "score": 12}


# --- The fake endpoint, in its own process ----------------------------------------------------


class FakeEndpoint:
    def __init__(self, latency_s: float):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.llm_servers", "--latency", str(latency_s),
             "--reply-json", json.dumps(REPLY)],
            cwd=REPO, stdout=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline().strip()
        if not line.startswith("PORT "):
            self.proc.kill()
            raise RuntimeError(f"The fake endpoint did not start: {line!r}")
        self.root = f"http://127.0.0.1:{int(line.split()[1])}"
        self.base_url = f"{self.root}/v1"

    def stats(self) -> dict:
        with urllib.request.urlopen(f"{self.root}/_stats", timeout=5) as response:
            return json.loads(response.read())

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.root}/_reset", data=b"{}", method="POST")
        with urllib.request.urlopen(request, timeout=5):
            pass

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# --- Django, pointed at the fake -----------------------------------------------------------------


def setup_django(base_url: str, var_dir: str, database_url: str | None) -> None:
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret", "FIELD_ENCRYPTION_KEYS": "YmVuY2gtb25seS1maWVsZC1rZXktbm90LWZvci1wcm8=", "VAR_DIR": var_dir,
        "LLM_PROVIDER": "openai", "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "bench", "LLM_MODEL": "fake-model",
        "LLM_TIMEOUT_SECONDS": "30", "CELERY_TASK_ALWAYS_EAGER": "false", "DEBUG": "false",
    })
    for name in ("PROMETHEUS_MULTIPROC_DIR", "OTEL_EXPORTER_OTLP_ENDPOINT", "CELERY_BROKER_URL", "GOOGLE_API_KEY"):
        os.environ.pop(name, None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    for name in ("httpx2", "httpx", "openai", "agents", "audit"):
        logging.getLogger(name).setLevel(logging.WARNING)


def define_pipeline():
    """Five independent analysts, then one that reads all five; the same six calls one by one."""
    from pydantic import BaseModel, Field

    from agents.runtime.agent import Agent
    from agents.runtime.pipeline import CallSpec, Pipeline, Stage, register_pipeline

    class Finding(BaseModel):
        finding: str = Field(description="What this analyst found.")
        score: int = Field(ge=0, le=100, description="Risk, 0 to 100.")

    analysts = [Agent(id=f"bench_{i}", system_prompt=f"You are analyst {i}. Look at the case.", output_model=Finding)
                for i in range(1, 6)]
    judge = Agent(id="bench_judge", system_prompt="Weigh the five findings and conclude.", output_model=Finding)

    def five(ctx):
        return [CallSpec(a.id, a, {"case": ctx.case.reference, "amount": 940}) for a in analysts]

    def conclude(ctx):
        return [CallSpec(judge.id, judge, {"findings": {a.id: ctx.output(a.id) for a in analysts}})]

    def one(i):
        return lambda ctx: five(ctx)[i:i + 1]

    register_pipeline(Pipeline(name="bench_fanout", modes={
        "fanout": [Stage("analysts", five), Stage("judge", conclude)],
        "sequential": [*(Stage(f"analyst_{i + 1}", one(i)) for i in range(5)), Stage("judge", conclude)],
    }))


def queue_runs(n: int, mode: str) -> list[int]:
    from django.db import transaction

    from agents.tasks import pipeline_enqueue
    from casework.cases.services import case_create

    ids = []
    for i in range(n):
        case = case_create(actor="system", case_type="fraud_alert", title=f"Bench {mode} {i}")
        with transaction.atomic():
            ids.append(pipeline_enqueue(case=case, pipeline="bench_fanout", mode=mode, actor="system").pk)
    return ids


def execute(run_id: int) -> None:
    from django.db import connection

    from agents.models import AgentRun
    from agents.runtime.pipeline import execute_run

    try:
        run = execute_run(run_id)
        if run is None or run.status != AgentRun.Status.COMPLETED:
            raise RuntimeError(f"run {run_id} did not complete: {run and (run.status, run.error)}")
    finally:
        connection.close()


# --- The measurements ----------------------------------------------------------------------------


def one_run(mode: str, repeats: int) -> list[float]:
    walls = []
    for run_id in queue_runs(repeats, mode):
        started = time.perf_counter()
        execute(run_id)
        walls.append(time.perf_counter() - started)
    return walls


def bare_client(base_url: str, threads: int, per_thread: int) -> float:
    import openai

    client = openai.OpenAI(api_key="bench", base_url=base_url, max_retries=0, timeout=30)
    messages = [{"role": "user", "content": "Say something."}]

    def work() -> None:
        for _ in range(per_thread):
            client.chat.completions.create(model="fake-model", messages=messages, max_tokens=16)

    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        work_started = time.perf_counter()
        futures = [pool.submit(work) for _ in range(threads)]
        for f in futures:
            f.result()
        wall = time.perf_counter() - work_started
    client.close()
    return threads * per_thread / wall


def many_runs(endpoint: FakeEndpoint, runs: int, concurrency: int) -> dict:
    from django.conf import settings

    settings.LLM_MAX_CONCURRENCY = concurrency
    ids = queue_runs(runs, "fanout")
    endpoint.reset()
    with concurrent.futures.ThreadPoolExecutor(max_workers=runs) as pool:
        started = time.perf_counter()
        for f in [pool.submit(execute, run_id) for run_id in ids]:
            f.result()
        wall = time.perf_counter() - started
    stats = endpoint.stats()
    return {"concurrency": concurrency, "wall": wall, "calls": stats["requests"],
            "calls_per_s": stats["requests"] / wall, "runs_per_s": runs / wall, "max_in_flight": stats["max_in_flight"]}


# --- Report --------------------------------------------------------------------------------------


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}


def report(args, results: dict) -> str:
    lat = args.latency / 1000
    m = results["machine"]
    out = [
        f"Machine: {m['nproc']} CPUs, {m['cpu']}, Python {m['python']}; run {m['date']}.",
        f"Fake endpoint latency {args.latency:g} ms; database {results['database']}; "
        f"LLM_MAX_CONCURRENCY={results['default_concurrency']} for (a) and (b); median of {args.repeats} runs.",
        "",
        "| measurement | wall time (median) | min | ideal | median / ideal |",
        "|---|---|---|---|---|",
    ]
    for key, label, ideal in (("fanout", "(a) 5 independent agents, then 1 on their outputs (2 stages)", 2 * lat),
                              ("sequential", "(b) the same 6 calls one after another (6 stages)", 6 * lat)):
        walls = results[key]
        med = statistics.median(walls)
        out.append(f"| {label} | {med * 1000:.0f} ms | {min(walls) * 1000:.0f} ms | {ideal * 1000:.0f} ms "
                   f"| {med / ideal:.2f} |")
    out += ["", "(c) The bare `openai` client, N threads sharing one client, "
                f"{args.per_thread} requests per thread:", "",
            "| threads | requests/s | ideal (N / latency) | share of ideal |", "|---|---|---|---|"]
    for threads, rate in results["bare"]:
        ideal = threads / lat
        out.append(f"| {threads} | {rate:.0f} | {ideal:.0f} | {rate / ideal:.0%} |")
    out += ["", f"(d) {args.runs} pipeline runs (6 LLM calls each) executed at once from {args.runs} threads:", "",
            "| LLM_MAX_CONCURRENCY | wall time | LLM calls/s | runs/s | max in flight at the endpoint "
            "| ideal calls/s |", "|---|---|---|---|---|---|"]
    for r in results["many"]:
        ideal = min(r["concurrency"], 5 * args.runs) / lat
        out.append(f"| {r['concurrency']} | {r['wall']:.2f} s | {r['calls_per_s']:.0f} | {r['runs_per_s']:.1f} "
                   f"| {r['max_in_flight']} | {ideal:.0f} |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=200, help="The fake endpoint's latency in ms (200).")
    parser.add_argument("--repeats", type=int, default=5, help="Runs of (a) and (b) each (5).")
    parser.add_argument("--threads", default="8,32,64,128,256", help="Thread counts for (c).")
    parser.add_argument("--per-thread", type=int, default=5, help="Requests per thread in (c) (5).")
    parser.add_argument("--runs", type=int, default=50, help="Pipeline runs executed at once in (d) (50).")
    parser.add_argument("--concurrency", default="8,32,64,128,256", help="LLM_MAX_CONCURRENCY values for (d).")
    parser.add_argument("--database-url", default=None,
                        help="Use this database (it gets migrated and written to) instead of a temporary SQLite file.")
    parser.add_argument("--write-readme", action="store_true", help="Write the figures into bench/README.md.")
    args = parser.parse_args()

    endpoint = FakeEndpoint(args.latency / 1000)
    try:
        with tempfile.TemporaryDirectory(prefix="casework-bench-") as var_dir:
            setup_django(endpoint.base_url, var_dir, args.database_url)
            from django.conf import settings
            from django.db import connection

            define_pipeline()
            from agents.tasks import run_pipeline

            run_pipeline.delay = lambda *a, **kw: None  # this script executes the runs itself
            results = {"machine": machine(), "default_concurrency": settings.LLM_MAX_CONCURRENCY,
                       "database": "PostgreSQL" if connection.vendor == "postgresql" else "SQLite (WAL)"}
            execute(queue_runs(1, "fanout")[0])  # warm up: imports, first connections, tracing set-up
            print("(a) fan-out pipeline ...", flush=True)
            results["fanout"] = one_run("fanout", args.repeats)
            print("(b) sequential pipeline ...", flush=True)
            results["sequential"] = one_run("sequential", args.repeats)
            results["bare"] = []
            for threads in (int(t) for t in args.threads.split(",")):
                print(f"(c) bare client, {threads} threads ...", flush=True)
                results["bare"].append((threads, bare_client(endpoint.base_url, threads, args.per_thread)))
            results["many"] = []
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                print(f"(d) {args.runs} runs, LLM_MAX_CONCURRENCY={concurrency} ...", flush=True)
                results["many"].append(many_runs(endpoint, args.runs, concurrency))
            connection.close()
    finally:
        endpoint.stop()

    text = report(args, results)
    print()
    print(text)
    if args.write_readme:
        write_block("llm_fanout", text)
        print(f"\nWritten to {README.relative_to(REPO)}.")


if __name__ == "__main__":
    main()
