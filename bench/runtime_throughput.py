"""Agent runtime throughput after the rebuild (LLM calls on one event loop per process, one
transaction per step, audit entries sequenced in the background). Run by hand:

    .venv/bin/python bench/runtime_throughput.py [--pg URL] [--threads 32,64,128]
        [--offline-threads 64] [--profile DIR] [--json FILE] [--write-readme]

Needs PostgreSQL (--pg, RUNTIME_BENCH_PG: postgres://postgres@127.0.0.1:5432) and Redis on
127.0.0.1:6379. It drops and re-creates its own database, RUNTIME_BENCH_DB
(casework_runtime_bench), migrated with Django's migrate, plus a template copy of it, and
flushes Redis database 13 (RUNTIME_BENCH_BROKER). Two workers of N threads open about
2 x (N + 2) connections (Django keeps one per thread); a trial that would pass the server's
max_connections is reported as not run instead of stalling on "too many clients".

The fake OpenAI-compatible server (bench/fraud_fake_server.py, its own process) answers
every request after a fixed latency (--latency, 200 ms), each fraud agent with what its
offline analyst concludes from the request's data, and records each request's times and
X-Casework-Run header.

(1) bare: the bare `openai.AsyncOpenAI` client, --bare-concurrency requests in flight (256)
    for --bare-seconds, each one of the six requests the fraud agents send for an alert
    (system prompt with the JSON schema, fenced data, response_format): calls/s, the
    ceiling the runtime is compared with.
(2) fake: --alerts alerts (200) through the production worker set-up: two Celery worker
    processes, `celery -A casework worker --pool=threads --concurrency=N --without-gossip
    --without-mingle --prefetch-multiplier=4 -n bench<i>@%h`, the first with --beat, on
    PostgreSQL + Redis with LLM_PROVIDER=openai pointed at the fake and
    LLM_MAX_CONCURRENCY=--max-concurrency (256). One trial per --threads value. The alerts
    are created (alert_create) while no worker runs, then the workers start. LLM calls/s is
    the fake's count of the runs' requests over first request received to last answered.
(3) offline: the same with LLM_PROVIDER=offline (--offline-threads): alerts/s, from the
    first run's start to the last run's end.
After every trial, `manage.py verify_audit_chain` (which links pending entries first) must
report the chain intact with 0 pending.

Every trial starts from the same database: migrated, with a history of 50 demo alerts (10
decided, their knowledge patterns captured) so the similar-case search has cases to scan.
--profile DIR samples the first worker of each (2) trial with py-spy (the thread holding the
GIL; PY_SPY names the binary) and summarises where its time goes.
--write-readme replaces the figures between the runtime_throughput markers in bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import logging
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

from readme_block import README, write_block  # bench/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parents[1]
PG = os.environ.get("RUNTIME_BENCH_PG", "postgres://postgres@127.0.0.1:5432")  # server, no database
DB = os.environ.get("RUNTIME_BENCH_DB", "casework_runtime_bench")
TEMPLATE_DB = f"{DB}_template"
BROKER = os.environ.get("RUNTIME_BENCH_BROKER", "redis://127.0.0.1:6379/13")
PY_SPY = os.environ.get("PY_SPY", str(Path(sys.executable).parent / "py-spy"))
HISTORY_SEED, ALERT_SEED = 4_000, 9_113
CLK_TCK = os.sysconf("SC_CLK_TCK")

log = logging.getLogger("bench")


# --- Services outside Django -----------------------------------------------------------------


def pg_admin(*statements: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        for sql in statements:
            conn.execute(sql)


def recreate_db(name: str, template: str | None = None) -> None:
    from django.db import connections

    connections.close_all()
    pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
             f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))


def pg_connection_room() -> tuple[int, int]:
    """(max_connections, connections open now) on the benchmark's server."""
    import psycopg

    with psycopg.connect(f"{PG}/postgres") as conn:
        limit = int(conn.execute("SHOW max_connections").fetchone()[0])
        used = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").fetchone()[0]
    return limit, used - 1  # not counting this check's own


def connections_needed(threads: int) -> int:
    """What two workers open at most: Django keeps one connection per thread that touched the
    database (CONN_MAX_AGE), so one per pool thread, plus each worker's audit sequencer and
    beat's periodic tasks; plus this process's own."""
    return 2 * (threads + 2) + 1


def flush_broker() -> None:
    import redis

    redis.Redis.from_url(BROKER).flushdb()


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / CLK_TCK, sum(values) / CLK_TCK


class FakeServer:
    """bench/fraud_fake_server.py in a subprocess."""

    def __init__(self, latency_s: float, log_dir: str):
        self._log = open(Path(log_dir) / "fake-server.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "bench" / "fraud_fake_server.py"), "--latency", str(latency_s)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=self._log, text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"The fake server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.root = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.root}/v1"

    def _get(self, path: str, method: str = "GET") -> dict:
        request = urllib.request.Request(self.root + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def stats(self) -> dict:
        return self._get("/_stats")

    def reset(self) -> None:
        self._get("/_reset", "POST")

    def requests(self) -> list[list]:
        """[received, answered, status, run, agent, call, client_gone] per request since the reset."""
        return self._get("/_requests")["requests"]

    def cpu_s(self) -> float:
        return process_cpu_s(self.proc.pid)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()


# --- Django --------------------------------------------------------------------------------


def setup_django(var_dir: str) -> None:
    """This process creates alerts and reads results; the workers run the pipelines.

    os.environ is what the workers and manage.py inherit (worker_env adds the provider), so
    it is cleaned of anything that would change their set-up. This process alone sequences
    its audit entries inline: a background sequencer thread would hold a connection to the
    database that is about to be dropped or copied as a template."""
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret", "VAR_DIR": var_dir,
        "DATABASE_URL": f"{PG}/{DB}", "CELERY_BROKER_URL": BROKER, "LLM_PROVIDER": "offline", "DEBUG": "false",
    })
    for name in ("CELERY_TASK_ALWAYS_EAGER", "PROMETHEUS_MULTIPROC_DIR", "OTEL_EXPORTER_OTLP_ENDPOINT",
                 "GOOGLE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "LLM_MODEL",
                 "LLM_MAX_CONCURRENCY", "AUDIT_SEQUENCER", "RUN_STALE_AFTER_SECONDS",
                 "RUN_QUEUED_STALE_AFTER_SECONDS", "RUN_SCAN_INTERVAL_SECONDS", "CONN_MAX_AGE", "LOG_LEVEL"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(REPO))
    import django
    from django.conf import settings

    django.setup()
    settings.AUDIT_SEQUENCER = "inline"
    for name in ("httpx2", "httpx", "openai", "agents", "audit", "celery", "casework"):
        logging.getLogger(name).setLevel(logging.WARNING)


def prepare_template() -> dict:
    """Fresh database, migrated, with a decided history; then copied as the trials' template."""
    from django.core.management import call_command
    from fraud_pipeline import eager

    from casework.cases.services import case_close
    from casework.fraud.demo_data import demo_alerts
    from casework.fraud.services import alert_create, pattern_capture
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create

    recreate_db(DB)
    call_command("migrate", verbosity=0)
    user = user_create(actor="system", username="bench", password="bench-pass-123", role=INVESTIGATOR)
    history = demo_alerts(HISTORY_SEED)
    decided = 0
    with eager():
        for demo in history:
            alert = alert_create(actor=user, data={**demo.row, "account_id": f"HIST-{demo.row['account_id']}"},
                                 via="demo")
            if demo.decision:
                outcome, reason, pattern = demo.decision
                decision = case_close(actor=user, case=alert.case, outcome=outcome, reason=reason)
                pattern_capture(decision=decision, pattern=pattern, actor="system")
                decided += 1
    from audit.services import audit_sequence

    audit_sequence()  # the template's own entries linked, so a trial's pending ones are its own
    recreate_db(TEMPLATE_DB, template=DB)
    return {"history": len(history), "decided": decided}


def verify_audit_chain(env: dict) -> dict:
    """`manage.py verify_audit_chain` as an operator runs it: links pending entries, then checks."""
    done = subprocess.run([sys.executable, "manage.py", "verify_audit_chain"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    text = (done.stdout + done.stderr).strip()
    found = re.search(r"intact: (\d+) entries verified, (\d+) pending", text)
    return {"ok": done.returncode == 0 and found is not None and found.group(2) == "0",
            "entries": int(found.group(1)) if found else 0, "pending": int(found.group(2)) if found else None,
            "output": text.splitlines()[-1] if text else ""}


# --- (1) the bare client ---------------------------------------------------------------------------


def fraud_requests(n_alerts: int = 20) -> list[dict]:
    """The chat.completions.create arguments the runtime sends for the fraud agents: for each
    of n alerts, the five specialists' requests and the orchestrator's (its input built from
    the offline analysts' outputs), as agents.runtime.runner and the openai provider build
    them (system prompt with the schema, fenced data, response_format, X-Casework headers)."""
    from fraud_pipeline import generate_alerts

    from agents.llm.offline_registry import OFFLINE_ANALYSTS
    from agents.pipelines import fraud_agents as fa
    from agents.runtime.prompting import fence_data, system_prompt_for

    builders = {"transaction": fa.build_transaction_input, "identity": fa.build_identity_input,
                "geo": fa.build_geo_input, "network": fa.build_network_input,
                "outcome_similarity": lambda d: fa.build_outcome_similarity_input(
                    d, similar_confirmed_cases_count_from_system=0, similar_cases=[], knowledge_patterns=[])}
    made = []
    for number, row in enumerate(generate_alerts(n_alerts, seed=ALERT_SEED + 1)):
        inputs = {agent_id: build(row) for agent_id, build in builders.items()}
        outputs = {agent_id: OFFLINE_ANALYSTS[agent_id](data) for agent_id, data in inputs.items()}
        inputs["orchestrator"] = fa.build_orchestrator_input(outputs)
        for agent_id, data in inputs.items():
            agent = fa.FRAUD_AGENTS[agent_id]
            made.append({
                "model": "fake-model", "temperature": agent.temperature, "max_tokens": agent.max_tokens,
                "messages": [{"role": "system", "content": system_prompt_for(agent.system_prompt, agent.output_schema())},
                             {"role": "user", "content": fence_data(data, label=agent.id)}],
                "response_format": {"type": "json_schema",
                                    "json_schema": {"name": agent.id, "schema": agent.output_schema()}},
                "extra_headers": {"X-Casework-Agent": agent.id, "X-Casework-Run": f"bare-{number}",
                                  "X-Casework-Call": agent.id},
            })
    return made


async def _bare_load(base_url: str, payloads: list[dict], concurrency: int, seconds: float) -> int:
    import openai

    client = openai.AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0, timeout=30)
    loop = asyncio.get_running_loop()
    stop_at = loop.time() + seconds
    done = 0

    async def one_slot(slot: int) -> None:
        nonlocal done
        n = slot
        while loop.time() < stop_at:
            await client.chat.completions.create(**payloads[n % len(payloads)])
            n += concurrency
            done += 1

    await asyncio.gather(*(one_slot(i) for i in range(concurrency)))
    await client.close()
    return done


def bare_client(fake: FakeServer, concurrency: int, seconds: float) -> dict:
    payloads = fraud_requests()
    sizes = [len(json.dumps(p["messages"])) + len(json.dumps(p["response_format"])) for p in payloads]
    # A first second opens the connections; only the second load is measured.
    asyncio.run(_bare_load(fake.base_url, payloads, concurrency, 1.0))
    fake.reset()
    cpu_before, busy_before = fake.cpu_s(), machine_busy()
    client_cpu = time.process_time()
    done = asyncio.run(_bare_load(fake.base_url, payloads, concurrency, seconds))
    client_cpu = time.process_time() - client_cpu
    rows = fake.requests()
    window = max(r[1] for r in rows) - min(r[0] for r in rows)
    return {"concurrency": concurrency, "seconds": seconds, "calls": len(rows), "client_done": done,
            "window_s": window, "calls_per_s": len(rows) / window, "max_in_flight": fake.stats()["max_in_flight"],
            "request_bytes_median": statistics.median(sizes), "client_cpu_per_call_ms": client_cpu / done * 1000,
            "fake_cpu_s": fake.cpu_s() - cpu_before, "machine_busy": busy_share(busy_before, machine_busy()),
            "load_avg_1m": os.getloadavg()[0]}


def busy_share(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Share of the machine's CPUs busy between two machine_busy() readings."""
    return (after[0] - before[0]) / max(1e-9, after[1] - before[1])


# --- (2), (3): alerts through two Celery workers ----------------------------------------------------


class Worker:
    """`celery -A casework worker` as the production set-up runs it, in a subprocess."""

    def __init__(self, number: int, threads: int, env: dict, log_dir: str, beat: bool = False):
        self.number = number
        self.command = [str(Path(sys.executable).parent / "celery"), "-A", "casework", "worker", "--pool=threads",
                        f"--concurrency={threads}", "--without-gossip", "--without-mingle",
                        "--prefetch-multiplier=4", "-n", f"bench{number}@%h", "--loglevel=INFO",
                        *(["--beat"] if beat else [])]
        self.log_path = Path(log_dir) / f"worker-{number}-{threads}-{int(time.time())}.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(self.command, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self._spy = None

    def profile(self, output: Path) -> None:
        """Sample the thread holding the GIL (raw collapsed stacks) until stop()."""
        self._spy = subprocess.Popen(
            [PY_SPY, "record", "--pid", str(self.proc.pid), "--rate", "100", "--format", "raw", "--gil",
             "--nonblocking", "--nolineno", "--output", str(output)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def cpu_s(self) -> float:
        return process_cpu_s(self.proc.pid)

    def tasks_received(self) -> int:
        """Pipeline runs this worker took from the broker (beat's periodic tasks not counted)."""
        return len(re.findall(r"run_pipeline\[[^\]]*\] received", self.log_path.read_text(errors="replace")))

    def stop(self) -> None:
        if self._spy is not None and self._spy.poll() is None:
            self._spy.send_signal(signal.SIGINT)  # py-spy writes its file on Ctrl-C
            try:
                self._spy.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._spy.kill()
        if self.proc.poll() is None:
            # Warm shutdown; the whole session, so an embedded beat process goes too.
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._log.close()

    def tail(self, lines: int = 15) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def worker_env(provider: str, fake: FakeServer | None, max_concurrency: int) -> dict:
    env = {**os.environ, "LLM_PROVIDER": provider, "PYTHONUNBUFFERED": "1"}
    if provider == "openai":
        env.update({"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "bench", "LLM_MODEL": "fake-model",
                    "LLM_MAX_CONCURRENCY": str(max_concurrency)})
    return env


def wait_for_runs(run_ids: list[int], workers: list[Worker], timeout: float, stall: float = 60) -> None:
    """Until every run has ended; fails on a timeout, a dead worker, or no run ending for `stall` s."""
    from agents.models import AgentRun

    deadline = time.monotonic() + timeout
    last_left, last_progress = None, time.monotonic()
    while True:
        left = AgentRun.objects.filter(pk__in=run_ids, status__in=AgentRun.ACTIVE).count()
        if not left:
            return
        now = time.monotonic()
        if left != last_left:
            last_left, last_progress = left, now
        for worker in workers:
            if worker.proc.poll() is not None:
                raise RuntimeError(f"Worker {worker.number} exited ({worker.proc.returncode}):\n{worker.tail()}")
        if now > deadline or now - last_progress > stall:
            tails = "\n".join(w.tail() for w in workers)
            raise RuntimeError(f"{left} runs still active (timeout {timeout:.0f} s, stall {stall:.0f} s):\n{tails}")
        time.sleep(0.25)


def wait_for_first_start(run_ids: list[int], workers: list[Worker], timeout: float = 60) -> None:
    from agents.models import AgentRun

    deadline = time.monotonic() + timeout
    while not AgentRun.objects.filter(pk__in=run_ids, started_at__isnull=False).exists():
        if time.monotonic() > deadline:
            raise RuntimeError("No run started:\n" + "\n".join(w.tail() for w in workers))
        time.sleep(0.1)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def trial(provider: str, threads: int, rows: list[dict], fake: FakeServer, args, log_dir: str) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connections
    from django.db.models import Max, Min
    from fraud_pipeline import create_alerts

    from agents.models import AgentCall, AgentRun

    recreate_db(DB, template=TEMPLATE_DB)
    flush_broker()
    actor = get_user_model().objects.get(username="bench")
    create_s, case_ids = create_alerts(rows, actor)
    run_ids = list(AgentRun.objects.filter(case_id__in=case_ids, pipeline="fraud").values_list("pk", flat=True))
    connections.close_all()
    fake.reset()
    env = worker_env(provider, fake, args.max_concurrency)
    fake_cpu, busy = fake.cpu_s(), machine_busy()
    workers = [Worker(n, threads, env, log_dir, beat=n == 1) for n in (1, 2)]
    profile = None
    try:
        if args.profile and provider == "openai":
            # From the first run's start: the workers' boot (imports, Django set-up) is not the
            # steady state being profiled.
            wait_for_first_start(run_ids, workers)
            profile = Path(args.profile) / f"worker1-threads{threads}.txt"
            workers[0].profile(profile)
        wait_for_runs(run_ids, workers, args.timeout)
        worker_cpu = [w.cpu_s() for w in workers]
        busy = busy_share(busy, machine_busy())
        fake_cpu = fake.cpu_s() - fake_cpu
    finally:
        for worker in workers:
            worker.stop()
    runs = AgentRun.objects.filter(pk__in=run_ids)
    span = runs.aggregate(first=Min("started_at"), last=Max("finished_at"))
    wall = (span["last"] - span["first"]).total_seconds()
    durations = [(r.finished_at - r.started_at).total_seconds() for r in runs.only("started_at", "finished_at")]
    result = {
        "provider": provider, "threads": threads, "alerts": len(rows), "create_per_s": len(rows) / create_s,
        "runs": dict(Counter(runs.values_list("status", flat=True))), "wall_s": wall,
        "alerts_per_s": len(rows) / wall, "run_p50_s": statistics.median(durations),
        "run_p95_s": percentile(durations, 0.95), "agent_calls": AgentCall.objects.filter(run__in=runs).count(),
        "tasks_received": [w.tasks_received() for w in workers], "worker_cpu_s": worker_cpu,
        "worker_cpu_ms_per_alert": sum(worker_cpu) / len(rows) * 1000, "fake_cpu_s": fake_cpu,
        "machine_busy": busy, "load_avg_1m": os.getloadavg()[0],
    }
    if provider == "openai":
        wanted = {str(pk) for pk in run_ids}
        requests = [r for r in fake.requests() if r[3] in wanted]
        window = max(r[1] for r in requests) - min(r[0] for r in requests)
        result.update({"llm_requests": len(requests), "llm_window_s": window,
                       "calls_per_s": len(requests) / window, "max_in_flight": fake.stats()["max_in_flight"],
                       "llm_errors": sum(1 for r in requests if r[2] != 200)})
    connections.close_all()
    result["audit"] = verify_audit_chain(env)
    if profile is not None and profile.exists():
        result["profile"] = summarise_profile(profile)
    return result


# Where the GIL holder's time goes, by the first of these found on a sampled stack (in this
# order, so an import inside an SDK call counts as an import).
PROFILE_BUCKETS = (
    ("imports on first use (the openai package, imported by the first LLM call)", ("_find_and_load ",)),
    ("openai SDK: building, sending, reading a request (AsyncCompletions.create)", ("AsyncCompletions.create ",)),
    ("runtime around each call (prompt, schema, retry, spans, metrics, parsing)", ("arun_agent ",)),
    ("run thread: execute_run (claim, similar cases, step and run writes, finish)", ("execute_run ",)),
    ("event loop itself (scheduling, timers, callbacks)", ("BaseEventLoop._run_once ",)),
    ("audit sequencer thread", ("_Sequencer",)),
    ("Celery / kombu / Redis", ("celery/", "kombu/", "redis/")),
)


def summarise_profile(path: Path, top: int = 25) -> dict:
    """Buckets (above), and the top functions by own samples (innermost frame) and by total
    samples (anywhere on the stack)."""
    own: Counter = Counter()
    total: Counter = Counter()
    buckets: Counter = Counter()
    samples = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        samples += n
        frames = [f for f in stack.split(";") if f and not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        own[frames[-1]] += n
        for frame in set(frames):
            total[frame] += n
        label = next((label for label, needles in PROFILE_BUCKETS if any(needle in stack for needle in needles)),
                     "other")
        buckets[label] += n
    return {"samples": samples, "buckets": buckets.most_common(), "own": own.most_common(top),
            "total": total.most_common(top * 2)}


# --- Report --------------------------------------------------------------------------------


def machine() -> dict:
    import celery
    import django
    import openai
    import psycopg
    import redis

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown")
    with psycopg.connect(f"{PG}/postgres") as conn:
        pg = conn.execute("SHOW server_version").fetchone()[0]
    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(), "postgresql": pg,
            "max_connections": pg_connection_room()[0],
            "redis": redis.Redis.from_url(BROKER).info("server")["redis_version"], "django": django.get_version(),
            "celery": celery.__version__, "openai": openai.__version__,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}


# Quoted from the issue: the runtime before the rebuild (threads, one blocking call per thread,
# one transaction per call, the audit chain locked by every writer).
BEFORE = ("**Before the rebuild** (from the issue): 200 alerts at 200 ms through one threads worker, 1,200 calls "
          "in 29.6 s = 41 calls/s, 6.8 alerts/s; the bare AsyncOpenAI client 252 calls/s, so a ratio of 0.16. One "
          "alert's critical path 2.24 x the latency. 101 SQL statements in 8 transactions per alert run (now 17 "
          "in 4, pinned by tests/fraud/test_pipeline_writes.py).")


def report(args, results: dict) -> str:
    m = results["machine"]
    out = [f"Machine: {m['nproc']} CPUs ({m['cpu']}), Python {m['python']}, PostgreSQL {m['postgresql']} "
           f"(max_connections {m['max_connections']}), Redis {m['redis']}, Django {m['django']}, Celery "
           f"{m['celery']}, openai {m['openai']}; run {m['date']}. CPU figures are user + system time of the "
           "process named; machine busy is the share of both CPUs busy (anything running) during the trial.",
           "", BEFORE, ""]
    bare = results.get("bare")
    if bare:
        out += [f"**(1) Bare client**: `openai.AsyncOpenAI`, {bare['concurrency']} requests in flight for "
                f"{bare['seconds']:g} s, the fraud agents' own requests (median {bare['request_bytes_median']:,.0f} "
                f"bytes of messages and schema), fake at {args.latency:g} ms: **{bare['calls_per_s']:.0f} calls/s** "
                f"({bare['calls']:,} calls in {bare['window_s']:.1f} s; at most {bare['max_in_flight']} in flight; "
                f"client CPU {bare['client_cpu_per_call_ms']:.1f} ms a call; fake server CPU "
                f"{bare['fake_cpu_s'] / bare['window_s']:.0%} of a core; machine {bare['machine_busy']:.0%} busy, "
                f"load {bare['load_avg_1m']:.1f}).", ""]
    fake_trials = [t for t in results.get("trials", []) if t["provider"] == "openai"]
    if fake_trials:
        ceiling = bare["calls_per_s"] if bare else None
        out += [f"**(2) {args.alerts} alerts, fake LLM at {args.latency:g} ms**, two threads workers (N threads "
                f"each, LLM_MAX_CONCURRENCY={args.max_concurrency}), drained. LLM calls/s: the runs' requests "
                "at the fake, first received to last answered. Worker CPU: both workers' CPU over the alerts, "
                "and over the LLM calls.", "",
                "| threads per worker | LLM calls/s | ratio to bare | alerts/s | run p50 / p95 | max in flight "
                "| completed | runs per worker | worker CPU per alert / per call | machine busy, load | audit chain |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for t in fake_trials:
            if "skipped" in t:
                out.append(f"| {t['threads']} | not run: {t['skipped']} |" + " |" * 9)
                continue
            ratio = f"{t['calls_per_s'] / ceiling:.2f}" if ceiling else "-"
            out.append(f"| {t['threads']} | **{t['calls_per_s']:.0f}** ({t['llm_requests']:,} in "
                       f"{t['llm_window_s']:.1f} s) | **{ratio}** | {t['alerts_per_s']:.1f} | "
                       f"{t['run_p50_s'] * 1000:,.0f} / {t['run_p95_s'] * 1000:,.0f} ms | {t['max_in_flight']} | "
                       f"{t['runs'].get('completed', 0)}/{t['alerts']} | {' + '.join(map(str, t['tasks_received']))} | "
                       f"{t['worker_cpu_ms_per_alert']:.0f} / {t['worker_cpu_ms_per_alert'] / 6:.1f} ms | "
                       f"{t['machine_busy']:.0%}, {t['load_avg_1m']:.1f} | {audit_cell(t['audit'])} |")
        out.append("")
    offline = [t for t in results.get("trials", []) if t["provider"] == "offline"]
    if offline:
        out += [f"**(3) {args.alerts} alerts, offline provider**, the same two workers, drained; first run's start "
                "to last run's end:", "",
                "| threads per worker | alerts/s | wall | run p50 / p95 | completed | runs per worker "
                "| worker CPU per alert | machine busy, load | audit chain |",
                "|---|---|---|---|---|---|---|---|---|"]
        for t in offline:
            if "skipped" in t:
                out.append(f"| {t['threads']} | not run: {t['skipped']} |" + " |" * 7)
                continue
            out.append(f"| {t['threads']} | **{t['alerts_per_s']:.1f}** | {t['wall_s']:.1f} s | "
                       f"{t['run_p50_s'] * 1000:,.0f} / {t['run_p95_s'] * 1000:,.0f} ms | "
                       f"{t['runs'].get('completed', 0)}/{t['alerts']} | {' + '.join(map(str, t['tasks_received']))} | "
                       f"{t['worker_cpu_ms_per_alert']:.0f} ms | {t['machine_busy']:.0%}, {t['load_avg_1m']:.1f} | "
                       f"{audit_cell(t['audit'])} |")
        out.append("")
    profiled = [t for t in fake_trials if t.get("profile")]
    if profiled:
        out += ["Where the first worker's time goes in (2) (py-spy, samples of the thread holding the GIL, from "
                "the first run's start to the last run's end):", "",
                "| part | " + " | ".join(f"threads {t['threads']}" for t in profiled) + " |",
                "|---|" + "---|" * len(profiled)]
        shares = [{label: n / t["profile"]["samples"] for label, n in t["profile"]["buckets"]} for t in profiled]
        for label in [label for label, _ in PROFILE_BUCKETS] + ["other"]:
            out.append(f"| {label} | " + " | ".join(f"{s.get(label, 0):.0%}" for s in shares) + " |")
        out.append("")
    return "\n".join(out)


def audit_cell(audit: dict) -> str:
    if audit["ok"]:
        return f"intact ({audit['entries']:,} entries, 0 pending)"
    return f"FAILED: {audit['output']}"


def main() -> None:
    global PG
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg", default=PG, help=f"The PostgreSQL server, no database ({PG}; RUNTIME_BENCH_PG).")
    parser.add_argument("--latency", type=float, default=200, help="The fake's latency per call, ms (200).")
    parser.add_argument("--alerts", type=int, default=200, help="Alerts per trial (200).")
    parser.add_argument("--threads", default="32,64,128", help="(2) threads per worker, one trial each.")
    parser.add_argument("--offline-threads", default="64", help="(3) threads per worker, one trial each.")
    parser.add_argument("--max-concurrency", type=int, default=256, help="LLM_MAX_CONCURRENCY of each worker.")
    parser.add_argument("--bare-concurrency", type=int, default=256, help="(1) requests in flight (256).")
    parser.add_argument("--bare-seconds", type=float, default=6, help="(1) seconds measured (6).")
    parser.add_argument("--phases", default="bare,fake,offline", help="Which to run (bare,fake,offline).")
    parser.add_argument("--timeout", type=float, default=300, help="Give up on a trial after this many s.")
    parser.add_argument("--profile", default="", help="py-spy the first worker of each (2) trial into this folder.")
    parser.add_argument("--json", default="", help="Also write the raw results to this file.")
    parser.add_argument("--keep", action="store_true", help="Keep the databases, worker logs and traces afterwards.")
    parser.add_argument("--write-readme", action="store_true", help="Write the figures into bench/README.md.")
    args = parser.parse_args()
    PG = args.pg.rstrip("/")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    phases = set(args.phases.split(","))
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)

    # --keep keeps the worker logs and trace files too.
    var_dir = tempfile.mkdtemp(prefix="casework-runtime-bench-")
    try:
        log.info("VAR_DIR (worker logs, traces): %s", var_dir)
        setup_django(var_dir)
        from fraud_pipeline import generate_alerts

        results: dict = {"machine": machine(), "trials": []}
        fake = FakeServer(args.latency / 1000, var_dir)
        try:
            if "bare" in phases:
                log.info("(1) bare AsyncOpenAI, %d in flight for %g s ...", args.bare_concurrency, args.bare_seconds)
                results["bare"] = bare_client(fake, args.bare_concurrency, args.bare_seconds)
                log.info("    %s", results["bare"])
            if phases & {"fake", "offline"}:
                log.info("Preparing %s (migrate, history) and its template ...", DB)
                results["template"] = prepare_template()
                rows = generate_alerts(args.alerts, seed=ALERT_SEED)
                plan = [("openai", int(n)) for n in args.threads.split(",") if n and "fake" in phases]
                plan += [("offline", int(n)) for n in args.offline_threads.split(",") if n and "offline" in phases]
                for provider, threads in plan:
                    log.info("(%s) %d alerts, two workers of %d threads, provider %s ...",
                             "2" if provider == "openai" else "3", args.alerts, threads, provider)
                    limit, used = pg_connection_room()
                    if connections_needed(threads) + used > limit:
                        # Past max_connections the workers' tasks fail with "too many clients" and
                        # their runs wait for the sweeper: a stalled trial, not a figure.
                        why = (f"needs about {connections_needed(threads)} PostgreSQL connections; the server "
                               f"allows {limit} and {used} are in use")
                        log.warning("    skipped: %s", why)
                        results["trials"].append({"provider": provider, "threads": threads, "skipped": why})
                        continue
                    try:
                        result = trial(provider, threads, rows, fake, args, var_dir)
                    except RuntimeError as exc:
                        log.error("    failed: %s", exc)
                        result = {"provider": provider, "threads": threads, "skipped": f"failed: {str(exc)[:300]}"}
                    log.info("    %s", {k: v for k, v in result.items() if k != "profile"})
                    results["trials"].append(result)
                    if args.json:
                        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
        finally:
            fake.stop()
            if not args.keep:
                from django.db import connections

                connections.close_all()
                pg_admin(f'DROP DATABASE IF EXISTS "{TEMPLATE_DB}" WITH (FORCE)',
                         f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
            flush_broker()
    finally:
        if not args.keep:
            shutil.rmtree(var_dir, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    text = report(args, results)
    print()
    print(text)
    for t in results["trials"]:
        if t.get("profile"):
            print(f"\nProfile, threads {t['threads']}: {t['profile']['samples']} samples (GIL holder)")
            for label, n in t["profile"]["buckets"]:
                print(f"    {n / t['profile']['samples']:6.1%}  {label}")
            for label in ("own", "total"):
                print(f"  top by {label}:")
                for frame, n in t["profile"][label][:25]:
                    print(f"    {n / t['profile']['samples']:6.1%}  {frame}")
    if args.write_readme:
        write_block("runtime_throughput", text)
        print(f"\nWritten to {README.relative_to(REPO)}.")


if __name__ == "__main__":
    main()
