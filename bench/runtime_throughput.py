"""Agent runtime throughput after the rebuild (LLM calls on one event loop per process, one
transaction per step, audit entries sequenced in the background), through the production
worker set-up of README.md ("PostgreSQL, Redis and several workers"). Run by hand:

    .venv/bin/python bench/runtime_throughput.py [--pg URL] [--threads 16,32] [--warm-threads 32]
        [--offline-threads 32] [--phases bare,fake,offline,critical,kill-pg,kill-embedded]
        [--profile DIR] [--json FILE] [--write-readme]
    .venv/bin/python bench/runtime_throughput.py --merge a.json b.json [--write-readme]

Needs PostgreSQL (--pg, RUNTIME_BENCH_PG: postgres://postgres@127.0.0.1:5432) and Redis on
127.0.0.1:6379. It drops and re-creates its own database, RUNTIME_BENCH_DB
(casework_runtime_bench), migrated with Django's migrate, plus a template copy of it, and
flushes Redis database 13 (RUNTIME_BENCH_BROKER). A trial whose workers would pass the
server's max_connections is reported as not run instead of stalling on "too many clients".

The production set-up (README.md): one worker process per core (two here), each
`celery -A casework worker --pool=threads --concurrency=N --hostname=casework<n>@%h
--without-gossip --without-mingle`, plus one `celery -A casework beat`; LLM_MAX_CONCURRENCY=256.

The fake OpenAI-compatible server (bench/fraud_fake_server.py, its own process) answers
every request after a fixed latency (--latency, 200 ms), each fraud agent with what its
offline analyst concludes from the request's data, and records each request's times and
X-Casework-Run header.

(1) bare: the bare openai client, --bare-concurrency requests in flight (256) for
    --bare-seconds, sending the six requests the fraud agents send for an alert (system
    prompt with the JSON schema, fenced data, response_format), in three ways, best of
    --bare-rounds interleaved rounds each (half before (2), half after):
      httpx:   `AsyncOpenAI()` (the SDK's default httpx transport), chat.completions.create;
      aiohttp: `AsyncOpenAI(http_client=DefaultAioHttpClient())`, chat.completions.create;
      raw:     the aiohttp client's raw `client.post(..., cast_to=httpx2.Response)`, what the
               runtime's provider sent until it moved onto aiohttp directly
               (agents/llm/openai_http.py; for reference, not a ceiling).
(2) fake: --alerts alerts (200) through the production set-up, LLM_PROVIDER=openai at the
    fake; one trial per --threads value. The alerts are created (alert_create) while no
    worker runs, then the workers start (cold: each imports the SDK on its first call).
    --warm-threads: the set-up starts first and runs warm-up alerts, its consumers are
    cancelled (Celery remote control) while the alerts are created, then resumed. LLM calls/s is the fake's count of the runs'
    requests over first request received to last answered; the ratio is against (1)'s
    httpx and aiohttp figures of the same sitting.
(2p) --pairs N (with --phases fake): N times a bare round of each client, then one trial of
    the first --threads value; reported: each pair, the ratio of the medians and the median of
    the pairs' ratios. Both sides are then the same statistic of interleaved runs, where (1)
    and (2) set one trial against the best of several bare rounds.
(3) offline: the same with LLM_PROVIDER=offline (--offline-threads): alerts/s, from the
    first run's start to the last run's end.
(4) critical: one alert at a time through the production set-up (fake at --latency), after
    warm-up alerts: the run's wall time (claim to end) / the latency, median of --critical.
(5) kill: --alerts alerts at --latency through the fake, with RUN_STALE_AFTER_SECONDS=10,
    RUN_QUEUED_STALE_AFTER_SECONDS=10 and RUN_SCAN_INTERVAL_SECONDS=2. When a third of the
    runs have completed, one worker process is sent SIGKILL and a replacement is started.
    kill-pg: the production set-up on PostgreSQL + Redis (two workers of --kill-threads and
    beat). kill-embedded: the embedded defaults, as bin/run starts them (a temporary VAR_DIR
    with its SQLite file and `filesystem://` broker; ONE worker `--pool=threads
    --concurrency=8 --beat`; it runs in a child process of this script, whose Django uses
    that SQLite file). Reported: completed/alerts; the runs the dead worker held (Redis: its
    messages left unacknowledged; filesystem: runs active at the kill with no message left in
    the queue folder) and, for each, the time from the kill until it was claimed again and
    until it ended; AgentCall rows per (run, key) (at most 1); requests per run at the fake
    minus 6 (the calls of the step that died unsaved), and whether any of them repeats a call
    of a step saved before the kill.
After every trial, `manage.py verify_audit_chain` (which links pending entries first) must
report the chain intact with 0 pending. The 1-minute load average is recorded before and
after every trial: the machine is shared. --merge reports, from several sittings' --json
files, each trial's quietest run (lowest load before it), its ratio against its own sitting's
bare client.

Every PostgreSQL trial starts from the same database: migrated, with a history of 50 demo
alerts (10 decided, their knowledge patterns captured) so the similar-case search has cases to
scan (the embedded trial builds the same history in its SQLite file).
--profile DIR samples the first worker of each (2) trial with py-spy (the thread holding the
GIL; PY_SPY names the binary) and summarises where its time goes.
--write-readme replaces the figures between the runtime_throughput markers in bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
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
CELERY = str(Path(sys.executable).parent / "celery")
HISTORY_SEED, ALERT_SEED = 4_000, 9_113
CLK_TCK = os.sysconf("SC_CLK_TCK")
CALLS_PER_ALERT = 6
# The kill trial's sweeper settings.
KILL_SETTINGS = {"RUN_STALE_AFTER_SECONDS": "10", "RUN_QUEUED_STALE_AFTER_SECONDS": "10",
                 "RUN_SCAN_INTERVAL_SECONDS": "2"}

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


def connections_needed(threads: int, workers: int = 2) -> int:
    """What the set-up opens at most: Django keeps one connection per thread that touched the
    database (CONN_MAX_AGE), so one per pool thread, plus each worker's audit sequencer and
    event-loop side; beat's one; plus this process's own."""
    return workers * (threads + 2) + 2


def flush_broker() -> None:
    import redis

    redis.Redis.from_url(BROKER).flushdb()


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def services_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds so far of every PostgreSQL and Redis server process, by pid."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "comm").read_text()
        except OSError:
            continue
        if name.startswith(("postgres", "redis")):
            found[int(entry.name)] = ("redis" if name.startswith("redis") else "postgres",
                                      process_cpu_s(int(entry.name)))
    return found


def bench_backends() -> set[int]:
    """The PostgreSQL server processes serving the benchmark's database now: the machine's other
    users (test suites on their own databases) share the server, and their backends' CPU is
    not ours. The server's own background processes (WAL writer, checkpointer) serve every
    database and are left out too."""
    import psycopg

    with psycopg.connect(f"{PG}/postgres") as conn:
        return {pid for (pid,) in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [DB])}


def services_cpu_since(before: dict[int, tuple[str, float]], backends: set[int] | None = None) -> dict[str, float]:
    """PostgreSQL's and Redis's CPU seconds since `before` (processes started since count whole;
    ones that ended are missed, so this is a lower bound). `backends`: count only these
    PostgreSQL processes (bench_backends())."""
    spent = {"postgres": 0.0, "redis": 0.0}
    for pid, (name, cpu) in services_cpu().items():
        if name == "postgres" and backends is not None and pid not in backends:
            continue
        spent[name] += cpu - before.get(pid, (name, 0.0))[1]
    return spent


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / CLK_TCK, sum(values) / CLK_TCK


def busy_share(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Share of the machine's CPUs busy between two machine_busy() readings."""
    return (after[0] - before[0]) / max(1e-9, after[1] - before[1])


def load() -> float:
    return round(os.getloadavg()[0], 2)


class FakeServer:
    """bench/fraud_fake_server.py in a subprocess (or, attach(), one another process started)."""

    def __init__(self, latency_s: float | None, log_dir: str | None):
        if latency_s is None:
            return
        self._log = open(Path(log_dir) / "fake-server.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "bench" / "fraud_fake_server.py"), "--latency", str(latency_s)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=self._log, text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"The fake server did not start: {line!r}")
        self.pid = self.proc.pid
        self._set_root(f"http://127.0.0.1:{int(line.split()[1])}")

    @classmethod
    def attach(cls, root: str, pid: int) -> FakeServer:
        fake = cls(None, None)
        fake.pid, fake.proc = pid, None
        fake._set_root(root)
        return fake

    def _set_root(self, root: str) -> None:
        self.root = root
        self.base_url = f"{root}/v1"

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
        return process_cpu_s(self.pid)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()


# --- Django --------------------------------------------------------------------------------


def setup_django(var_dir: str, embedded: bool = False) -> None:
    """This process creates alerts and reads results; the workers run the pipelines.

    os.environ is what the workers and manage.py inherit (worker_env adds the provider), so
    it is cleaned of anything that would change their set-up. embedded: no DATABASE_URL and
    no CELERY_BROKER_URL, i.e. SQLite and the filesystem broker under VAR_DIR. This process
    alone sequences its audit entries inline: a background sequencer thread would hold a
    connection to the database that is about to be dropped or copied as a template."""
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret", "FIELD_ENCRYPTION_KEYS": "YmVuY2gtb25seS1maWVsZC1rZXktbm90LWZvci1wcm8=", "VAR_DIR": var_dir,
        "DATABASE_URL": f"{PG}/{DB}", "CELERY_BROKER_URL": BROKER, "LLM_PROVIDER": "offline", "DEBUG": "false",
    })
    for name in ("CELERY_TASK_ALWAYS_EAGER", "PROMETHEUS_MULTIPROC_DIR", "OTEL_EXPORTER_OTLP_ENDPOINT",
                 "GOOGLE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "LLM_MODEL",
                 "LLM_MAX_CONCURRENCY", "AUDIT_SEQUENCER", "RUN_STALE_AFTER_SECONDS",
                 "RUN_QUEUED_STALE_AFTER_SECONDS", "RUN_SCAN_INTERVAL_SECONDS", "CONN_MAX_AGE", "LOG_LEVEL",
                 *(("DATABASE_URL", "CELERY_BROKER_URL") if embedded else ())):
        os.environ.pop(name, None)
    sys.path.insert(0, str(REPO))
    import django
    from django.conf import settings

    django.setup()
    settings.AUDIT_SEQUENCER = "inline"
    for name in ("httpx2", "httpx", "openai", "agents", "audit", "celery", "casework"):
        logging.getLogger(name).setLevel(logging.WARNING)


def build_history() -> dict:
    """The bench user and a decided history of 50 demo alerts, in the current database."""
    from django.core.management import call_command
    from fraud_pipeline import eager

    from audit.services import audit_sequence
    from casework.cases.services import case_close
    from casework.fraud.demo_data import demo_alerts
    from casework.fraud.services import alert_create, pattern_capture
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create

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
    audit_sequence()  # the history's own entries linked, so a trial's pending ones are its own
    return {"history": len(history), "decided": decided}


def prepare_template() -> dict:
    """Fresh database, migrated, with a decided history; then copied as the trials' template."""
    recreate_db(DB)
    made = build_history()
    recreate_db(TEMPLATE_DB, template=DB)
    return made


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

    import casework.fraud.agents as fa
    from agents.llm.offline_registry import OFFLINE_ANALYSTS
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


BARE_WAYS = {
    "httpx": "`AsyncOpenAI()` (default httpx transport), `chat.completions.create`",
    "aiohttp": "`AsyncOpenAI(http_client=DefaultAioHttpClient())`, `chat.completions.create`",
    "raw": "`AsyncOpenAI(http_client=DefaultAioHttpClient())`, raw `client.post(..., cast_to=httpx2.Response)` "
           "(the provider's request until it moved onto aiohttp directly; reference, not a ceiling)",
}


async def _bare_load(way: str, base_url: str, payloads: list[dict], concurrency: int, seconds: float) -> int:
    import httpx2
    import openai

    extra = {} if way == "httpx" else {"http_client": openai.DefaultAioHttpClient()}
    client = openai.AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0, timeout=30, **extra)
    loop = asyncio.get_running_loop()
    stop_at = loop.time() + seconds
    done = 0

    async def send(payload: dict) -> None:
        if way == "raw":
            body = {k: v for k, v in payload.items() if k != "extra_headers"}
            response = await client.post("/chat/completions", cast_to=httpx2.Response, body=body,
                                         options={"headers": payload["extra_headers"]})
            response.json()
        else:
            await client.chat.completions.create(**payload)

    async def one_slot(slot: int) -> None:
        nonlocal done
        n = slot
        while loop.time() < stop_at:
            await send(payloads[n % len(payloads)])
            n += concurrency
            done += 1

    await asyncio.gather(*(one_slot(i) for i in range(concurrency)))
    await client.close()
    return done


def bare_once(way: str, fake: FakeServer, payloads: list[dict], concurrency: int, seconds: float) -> dict:
    # A first second opens the connections; only the second load is measured.
    asyncio.run(_bare_load(way, fake.base_url, payloads, concurrency, 1.0))
    fake.reset()
    cpu_before, busy_before, load_before = fake.cpu_s(), machine_busy(), load()
    client_cpu = time.process_time()
    done = asyncio.run(_bare_load(way, fake.base_url, payloads, concurrency, seconds))
    client_cpu = time.process_time() - client_cpu
    rows = fake.requests()
    window = max(r[1] for r in rows) - min(r[0] for r in rows)
    return {"way": way, "concurrency": concurrency, "seconds": seconds, "calls": len(rows), "client_done": done,
            "window_s": window, "calls_per_s": len(rows) / window, "max_in_flight": fake.stats()["max_in_flight"],
            "client_cpu_per_call_ms": client_cpu / done * 1000, "fake_cpu_s": fake.cpu_s() - cpu_before,
            "machine_busy": busy_share(busy_before, machine_busy()), "load_before": load_before,
            "load_after": load()}


def bare_client(fake: FakeServer, concurrency: int, seconds: float, rounds: int, before: dict | None = None) -> dict:
    """Each way `rounds` times, interleaved; the best round of each (the machine is shared).
    `before`: an earlier bare_client() of the same sitting, whose rounds count too."""
    payloads = fraud_requests()
    sizes = [len(json.dumps(p["messages"])) + len(json.dumps(p["response_format"])) for p in payloads]
    runs: dict[str, list[dict]] = {way: list((before or {}).get("rounds_raw", {}).get(way, [])) for way in BARE_WAYS}
    for _ in range(rounds):
        for way in BARE_WAYS:
            runs[way].append(bare_once(way, fake, payloads, concurrency, seconds))
            log.info("    bare %s: %.0f calls/s, %.2f ms CPU a call, load %.1f", way, runs[way][-1]["calls_per_s"],
                     runs[way][-1]["client_cpu_per_call_ms"], runs[way][-1]["load_after"])
    best = {way: max(r, key=lambda x: x["calls_per_s"]) for way, r in runs.items()}
    return {"request_bytes_median": statistics.median(sizes), "rounds": len(runs["httpx"]), "best": best,
            "all": {way: [round(x["calls_per_s"]) for x in r] for way, r in runs.items()}, "rounds_raw": runs}


# --- Celery processes -------------------------------------------------------------------------------


class CeleryProcess:
    """`celery -A casework ...` in a subprocess of its own session, logging to a file."""

    def __init__(self, name: str, args: list[str], env: dict, log_dir: str):
        self.name = name
        self.command = [CELERY, "-A", "casework", *args]
        self.log_path = Path(log_dir) / f"{name}-{time.time():.0f}.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(self.command, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self._spy = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def profile(self, output: Path) -> None:
        """Sample the thread holding the GIL (raw collapsed stacks) until stop()."""
        self._spy = subprocess.Popen(
            [PY_SPY, "record", "--pid", str(self.proc.pid), "--rate", os.environ.get("PY_SPY_RATE", "100"), "--format", "raw", "--gil",
             "--nonblocking", "--nolineno", "--output", str(output)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def cpu_s(self) -> float:
        return process_cpu_s(self.proc.pid)

    def tasks_received(self) -> int:
        """Pipeline runs this worker took from the broker (the sweeper's tasks not counted)."""
        return len(re.findall(r"run_pipeline\[[^\]]*\] received", self.log_path.read_text(errors="replace")))

    def kill(self, whole_session: bool = False) -> None:
        """SIGKILL: the process (or its whole session: a worker with an embedded beat)."""
        if whole_session:
            os.killpg(self.proc.pid, signal.SIGKILL)
        else:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

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
        else:
            try:  # what a killed worker's session left behind (an embedded beat)
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._log.close()

    def tail(self, lines: int = 15) -> str:
        return f"[{self.name}]\n" + "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def production_worker(n: int, threads: int, env: dict, log_dir: str) -> CeleryProcess:
    """README.md's worker, one per core."""
    return CeleryProcess(f"worker{n}-t{threads}", [
        "worker", "--pool=threads", f"--concurrency={threads}", f"--hostname=casework{n}@%h", "--without-gossip",
        "--without-mingle", "--loglevel=INFO"], env, log_dir)


def production_setup(threads: int, env: dict, log_dir: str) -> list[CeleryProcess]:
    """One worker per core (two here) and one beat; beat's schedule file starts afresh."""
    Path(os.environ["VAR_DIR"], "celerybeat-schedule").unlink(missing_ok=True)
    return [production_worker(n, threads, env, log_dir) for n in (1, 2)] + [
        CeleryProcess("beat", ["beat", "--loglevel=INFO"], env, log_dir)]


def embedded_worker(env: dict, log_dir: str) -> CeleryProcess:
    """bin/run's worker: threads, 8, with an embedded beat."""
    return CeleryProcess("embedded-worker", ["worker", "--beat", "--loglevel=INFO", "--pool=threads",
                                             "--concurrency=8"], env, log_dir)


def worker_env(provider: str, fake: FakeServer | None, max_concurrency: int | None, extra: dict | None = None) -> dict:
    env = {**os.environ, "LLM_PROVIDER": provider, "PYTHONUNBUFFERED": "1", **(extra or {})}
    if provider == "openai":
        env.update({"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "bench", "LLM_MODEL": "fake-model"})
        if max_concurrency:
            env["LLM_MAX_CONCURRENCY"] = str(max_concurrency)
    return env


def workers_of(procs: list[CeleryProcess]) -> list[CeleryProcess]:
    return [p for p in procs if p.name != "beat"]


def check_alive(procs: list[CeleryProcess]) -> None:
    for p in procs:
        if p.proc.poll() is not None:
            raise RuntimeError(f"{p.name} exited ({p.proc.returncode}):\n{p.tail()}")


def wait_for_runs(run_ids: list[int], procs: list[CeleryProcess], timeout: float, stall: float = 60) -> None:
    """Until every run has ended; fails on a timeout, a dead process, or no run ending for `stall` s."""
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
        check_alive(procs)
        if now > deadline or now - last_progress > stall:
            tails = "\n".join(p.tail() for p in procs)
            raise RuntimeError(f"{left} runs still active (timeout {timeout:.0f} s, stall {stall:.0f} s):\n{tails}")
        time.sleep(0.2)


def wait_for_first_start(run_ids: list[int], procs: list[CeleryProcess], timeout: float = 120) -> None:
    from agents.models import AgentRun

    deadline = time.monotonic() + timeout
    while not AgentRun.objects.filter(pk__in=run_ids, started_at__isnull=False).exists():
        check_alive(procs)
        if time.monotonic() > deadline:
            raise RuntimeError("No run started:\n" + "\n".join(p.tail() for p in procs))
        time.sleep(0.05)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def fresh_trial_db() -> None:
    recreate_db(DB, template=TEMPLATE_DB)
    flush_broker()


def create_batch(rows: list[dict]) -> list[int]:
    """The alerts, created as the API does; returns their fraud runs' ids (queued)."""
    from django.contrib.auth import get_user_model
    from django.db import connections
    from fraud_pipeline import create_alerts

    from agents.models import AgentRun

    actor = get_user_model().objects.get(username="bench")
    _, case_ids = create_alerts(rows, actor)
    run_ids = list(AgentRun.objects.filter(case_id__in=case_ids, pipeline="fraud").values_list("pk", flat=True))
    connections.close_all()
    return run_ids


def run_figures(run_ids: list[int]) -> dict:
    from django.db.models import Max, Min, Sum

    from agents.models import AgentCall, AgentRun

    runs = AgentRun.objects.filter(pk__in=run_ids)
    attempts = AgentCall.objects.filter(run__in=runs).aggregate(n=Sum("attempts"))["n"] or 0
    span = runs.aggregate(first=Min("started_at"), last=Max("finished_at"))
    wall = (span["last"] - span["first"]).total_seconds()
    durations = [(r.finished_at - r.started_at).total_seconds() for r in runs.only("started_at", "finished_at")]
    return {"runs": dict(Counter(runs.values_list("status", flat=True))), "wall_s": wall,
            "alerts_per_s": len(run_ids) / wall, "run_p50_s": statistics.median(durations),
            "run_p95_s": percentile(durations, 0.95), "agent_calls": AgentCall.objects.filter(run__in=runs).count(), "attempts": attempts}


def fake_figures(fake: FakeServer, run_ids: list[int]) -> dict:
    wanted = {str(pk) for pk in run_ids}
    requests = [r for r in fake.requests() if r[3] in wanted]
    start = min(r[0] for r in requests)
    window = max(r[1] for r in requests) - start
    # Requests answered per half second of the window: where the ramp-up and the tail are.
    # And requests received per 0.1 s over the window's first second: how fast the set-up ramps up.
    answered, ramp = [0] * (int(window / 0.5) + 1), [0] * 10
    for r in requests:
        answered[int((r[1] - start) / 0.5)] += 1
        if r[0] - start < 1:
            ramp[int((r[0] - start) / 0.1)] += 1
    return {"llm_requests": len(requests), "llm_window_s": window, "calls_per_s": len(requests) / window,
            "answered_per_half_s": answered, "received_first_s_per_tenth": ramp,
            "max_in_flight": fake.stats()["max_in_flight"], "llm_errors": sum(1 for r in requests if r[2] != 200)}


# --- (2), (3): alerts through the production set-up -----------------------------------------------


def warm_up(procs: list[CeleryProcess], count: int, timeout: float) -> None:
    """Alerts until every worker has run some (imported the SDK, opened its connections)."""
    from fraud_pipeline import generate_alerts

    workers = workers_of(procs)
    deadline = time.monotonic() + timeout
    while not all(" ready." in w.log_path.read_text(errors="replace") for w in workers):
        check_alive(procs)
        if time.monotonic() > deadline:
            raise RuntimeError("The workers did not get ready:\n" + "\n".join(p.tail() for p in procs))
        time.sleep(0.2)
    for attempt in range(3):
        wait_for_runs(create_batch(generate_alerts(count, seed=ALERT_SEED + 100 + attempt)), procs, timeout)
        if all(w.tasks_received() for w in workers):
            return
    raise RuntimeError(f"A worker took none of the warm-up runs: {[w.tasks_received() for w in workers]}")


def consume(procs: list[CeleryProcess], on: bool) -> None:
    """Stop or resume the workers' consuming from the default queue (Celery remote control)."""
    from celery import current_app

    names = [f"casework{p.name[len('worker')]}@{platform.node()}" for p in workers_of(procs)]
    call = current_app.control.add_consumer if on else current_app.control.cancel_consumer
    replies = call("celery", destination=names, reply=True, timeout=10)
    if len(replies) != len(names):
        raise RuntimeError(f"{'add' if on else 'cancel'}_consumer: replies from {replies}, wanted {names}")


def trial(provider: str, threads: int, rows: list[dict], fake: FakeServer, args, log_dir: str,
          warm: bool = False) -> dict:
    """Cold (default): the alerts are created, then the set-up starts. warm: the set-up starts
    and runs warm-up alerts first, stops consuming while the alerts are created, then resumes."""
    from django.db import connections

    fresh_trial_db()
    load_before = load()
    env = worker_env(provider, fake, args.max_concurrency)
    if warm:
        procs = production_setup(threads, env, log_dir)
    run_ids = create_batch(rows) if not warm else []
    procs = procs if warm else production_setup(threads, env, log_dir)
    workers = workers_of(procs)
    profile = None
    try:
        if warm:
            warm_up(procs, 12, args.timeout)  # (2) warm
            consume(procs, False)
            received_before = [w.tasks_received() for w in workers]
            run_ids = create_batch(rows)
            fake.reset()
            consume(procs, True)
        else:
            fake.reset()
            received_before = [0 for _ in workers]
        wait_for_first_start(run_ids, procs)
        # From the first run's start: the workers' boot (imports, Django set-up) is not the
        # steady state being measured.
        cpu_start, busy, fake_cpu = [w.cpu_s() for w in workers], machine_busy(), fake.cpu_s()
        services = services_cpu()
        if args.profile and provider == "openai":
            profile = Path(args.profile) / f"worker1-threads{threads}{'-warm' if warm else ''}.txt"
            workers[0].profile(profile)
        wait_for_runs(run_ids, procs, args.timeout)
        worker_cpu = [w.cpu_s() - c for w, c in zip(workers, cpu_start, strict=True)]
        busy = busy_share(busy, machine_busy())
        fake_cpu = fake.cpu_s() - fake_cpu
        services = services_cpu_since(services, bench_backends())
    finally:
        for p in procs:
            p.stop()
    result = {"provider": provider, "threads": threads, "warm": warm, "alerts": len(rows), **run_figures(run_ids),
              "tasks_received": [w.tasks_received() - b for w, b in zip(workers, received_before, strict=True)],
              "worker_cpu_s": worker_cpu,
              "worker_cpu_ms_per_alert": sum(worker_cpu) / len(rows) * 1000, "fake_cpu_s": fake_cpu,
              "postgres_cpu_ms_per_alert": services["postgres"] / len(rows) * 1000,
              "redis_cpu_ms_per_alert": services["redis"] / len(rows) * 1000,
              "machine_busy": busy, "load_before": load_before, "load_after": load()}
    if provider == "openai":
        result.update(fake_figures(fake, run_ids))
        result["worker_cpu_ms_per_call"] = sum(worker_cpu) / result["llm_requests"] * 1000
    connections.close_all()
    result["audit"] = verify_audit_chain(env)
    if profile is not None and profile.exists():
        result["profile"] = summarise_profile(profile)
    return result


# --- (4): one alert's critical path -----------------------------------------------------------------


def trace_segments(trace_file: Path) -> dict | None:
    """A fraud run's critical path from its trace file (OTLP JSON lines), in ms: prepare
    (pipeline span start to the first agent), step 1 (the five specialists), between (step 1's
    write, the next plan, up to the orchestrator), step 2 (the orchestrator), end (step 2's
    write, finish, the run's end)."""
    if not trace_file.exists():
        return None
    spans = [span for line in trace_file.read_text().splitlines() if line.strip()
             for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]
    pipeline = next((sp for sp in spans if sp["name"].startswith("pipeline.")), None)
    agents = [sp for sp in spans if sp["name"].startswith("agent.")]
    if pipeline is None or len(agents) != CALLS_PER_ALERT:
        return None
    ns = {name: (int(sp["startTimeUnixNano"]), int(sp["endTimeUnixNano"])) for sp in agents
          for name in [sp["name"]]}
    first = [v for k, v in ns.items() if k != "agent.orchestrator"]
    p0, p1 = int(pipeline["startTimeUnixNano"]), int(pipeline["endTimeUnixNano"])
    s1, e1 = min(a for a, _ in first), max(b for _, b in first)
    s2, e2 = ns["agent.orchestrator"]
    return {"prepare": (s1 - p0) / 1e6, "step 1": (e1 - s1) / 1e6, "between": (s2 - e1) / 1e6,
            "step 2": (e2 - s2) / 1e6, "end": (p1 - e2) / 1e6, "pipeline span": (p1 - p0) / 1e6}


# Warm-up alerts, created at once so that both workers take some (each imports the openai
# package and opens its connections on its first call).
WARM_UP = 24


def critical_path(fake: FakeServer, args, log_dir: str) -> dict:
    """One alert at a time through the production set-up (idle workers, fake at --latency):
    the run's claim-to-end wall time over the latency, after WARM_UP alerts."""
    from django.db import connections
    from fraud_pipeline import generate_alerts

    from agents.models import AgentRun

    fresh_trial_db()
    load_before = load()
    env = worker_env("openai", fake, args.max_concurrency)
    procs = production_setup(args.critical_threads, env, log_dir)
    rows = generate_alerts(args.critical + WARM_UP, seed=ALERT_SEED + 7)  # (warm_up makes its own)
    latency = args.latency / 1000
    walls, created_to_end, llm_spans, segments = [], [], [], []
    try:
        warm_up(procs, WARM_UP, args.timeout)
        for row in rows[WARM_UP:]:
            fake.reset()
            (run_id,) = create_batch([row])
            wait_for_runs([run_id], procs, args.timeout)
            run = AgentRun.objects.get(pk=run_id)
            walls.append((run.finished_at - run.started_at).total_seconds())
            created_to_end.append((run.finished_at - run.created_at).total_seconds())
            requests = [r for r in fake.requests() if r[3] == str(run_id)]
            llm_spans.append(max(r[1] for r in requests) - min(r[0] for r in requests))
            segments.append(trace_segments(Path(os.environ["VAR_DIR"]) / "traces" / f"{run.trace_id}.jsonl"))
            connections.close_all()
    finally:
        for p in procs:
            p.stop()
    return {"repeats": len(walls), "latency_s": latency, "walls_s": walls,
            "ratio_median": statistics.median(walls) / latency,
            "ratio_min": min(walls) / latency, "ratio_max": max(walls) / latency,
            "created_to_end_ratio_median": statistics.median(created_to_end) / latency,
            "llm_span_ratio_median": statistics.median(llm_spans) / latency,
            "segments_median_ms": {k: statistics.median(seg[k] for seg in segments if seg)
                                   for k in next((seg for seg in segments if seg), {})},
            "load_before": load_before, "load_after": load(), "audit": verify_audit_chain(env)}


# --- (5): a worker killed a third of the way through ----------------------------------------------


def message_run_id(payload) -> int | None:
    """The run id of a kombu message of agents.tasks.run_pipeline (None for other tasks)."""
    if isinstance(payload, (bytes, str)):
        payload = json.loads(payload)
    headers = payload.get("headers") or {}
    if not str(headers.get("task", "")).endswith("run_pipeline"):
        return None
    found = re.match(r"\((\d+),?\)", headers.get("argsrepr") or "")
    if found:
        return int(found.group(1))
    body = json.loads(base64.b64decode(payload["body"]))
    return int(body[0][0])


def broker_waiting_runs(embedded: bool) -> set[int]:
    """Runs with a message still waiting in the broker (not yet taken by any worker)."""
    if embedded:
        from django.conf import settings

        folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
        found = set()
        for path in folder.glob("*.msg"):
            try:
                found.add(message_run_id(path.read_bytes()))
            except (OSError, ValueError):
                continue  # taken while being read
        return found - {None}
    import redis

    client = redis.Redis.from_url(BROKER)
    return {message_run_id(raw) for key in client.keys("celery*") if client.type(key) == b"list"
            for raw in client.lrange(key, 0, -1)} - {None}


def redis_unacked_runs() -> set[int]:
    """Runs whose message a worker took and never acknowledged (kombu's `unacked` hash)."""
    import redis

    client = redis.Redis.from_url(BROKER)
    return {message_run_id(json.loads(raw)[0]) for raw in client.hvals("unacked")} - {None}


def step_of(agent_id: str) -> int:
    """The fraud plan's step of an agent: the five specialists, then the orchestrator."""
    return 2 if agent_id == "orchestrator" else 1


LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): [A-Z]+/[^\]]*\] (.*)$")


def log_events(procs: list[CeleryProcess], since_epoch: float) -> list[tuple[float, str, str]]:
    """(seconds after since_epoch, process name, message) of every Celery log line, in order
    (Celery writes local time)."""
    events = []
    for p in procs:
        for line in p.log_path.read_text(errors="replace").splitlines():
            found = LOG_LINE.match(line)
            if found:
                at = datetime.datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                events.append((at - since_epoch, p.name, found.group(2)))
    return sorted(events)


def sweeper_figures(events: list[tuple[float, str, str]], replacement: str) -> dict:
    """After the kill: when the replacement was ready, and what the sweeper re-sent when."""
    after = [e for e in events if e[0] > 0]
    ready = next((t for t, name, text in after if name == replacement and text.endswith(" ready.")), None)
    resent = [(t, reason, int(n)) for t, _, text in after
              for n, reason in re.findall(r"Re-delivering (\d+) run\(s\) \((\w+)\)", text)]
    return {"replacement_ready_s": ready,
            "stale_resends": [(round(t, 2), n) for t, reason, n in resent if reason == "stale_heartbeat"],
            "queued_resent_runs": sum(n for _, reason, n in resent if reason == "queued"),
            "queued_resends": sum(1 for _, reason, _ in resent if reason == "queued")}


def kill_trial(embedded: bool, rows: list[dict], fake: FakeServer, args, log_dir: str) -> dict:
    from django.db import connections
    from django.db.models import Count
    from django.utils import timezone

    from agents.models import AgentCall, AgentRun

    if not embedded:
        fresh_trial_db()
    load_before = load()
    run_ids = create_batch(rows)
    fake.reset()
    env = worker_env("openai", fake, None if embedded else args.max_concurrency, KILL_SETTINGS)
    procs = [embedded_worker(env, log_dir)] if embedded else production_setup(args.kill_threads, env, log_dir)
    victim, replacement = procs[0], None
    last: dict[int, tuple] = {}
    timeline: dict[int, list[tuple]] = {pk: [] for pk in run_ids}

    def poll() -> Counter:
        now = time.monotonic()
        for pk, *state in AgentRun.objects.filter(pk__in=run_ids).values_list("pk", "status", "claim_token",
                                                                           "step_count"):
            if last.get(pk) != tuple(state):
                last[pk] = tuple(state)
                timeline[pk].append((now, *state))
        return Counter(state[0] for state in last.values())

    killed_at = killed_wall = killed_epoch = completed_before_kill = None
    at_kill: dict[int, tuple] = {}
    waiting_at_kill: set[int] = set()
    started = time.monotonic()
    try:
        while True:
            counts = poll()
            # A third done, and the worker busy (the embedded worker takes its runs in batches of
            # its 8 threads, so between two batches it holds none).
            if killed_at is None and counts["completed"] >= len(rows) / 3 and counts["running"]:
                victim.kill(whole_session=embedded)  # embedded: the worker and the beat it started
                killed_at, killed_wall, killed_epoch = time.monotonic(), timezone.now(), time.time()
                completed_before_kill = counts["completed"]
                log.info("    SIGKILL %s at %d/%d completed", victim.name, completed_before_kill, len(rows))
                poll()
                at_kill = dict(last)
                waiting_at_kill = broker_waiting_runs(embedded)
                replacement = (embedded_worker(env, log_dir) if embedded
                               else production_worker(1, args.kill_threads, env, log_dir))
                procs[0] = replacement
            if not counts["queued"] + counts["running"] and killed_at is not None:
                break
            check_alive(procs)
            if time.monotonic() - started > args.timeout:
                raise RuntimeError(f"Runs still active after {args.timeout:.0f} s: {dict(counts)}\n"
                                   + "\n".join(p.tail() for p in procs))
            time.sleep(0.1)
        if embedded:
            held = {pk for pk, state in at_kill.items() if state[0] in AgentRun.ACTIVE} - waiting_at_kill
        else:
            held = redis_unacked_runs()
        # Plus any run that was running at the kill and was claimed again afterwards.
        held |= {pk for pk, state in at_kill.items() if state[0] == "running"
                 and any(t > killed_at and token != state[1] for t, _, token, _ in timeline[pk])}
        held = {pk for pk in held if pk in at_kill and at_kill[pk][0] in AgentRun.ACTIVE}
    finally:
        for p in [*procs, victim]:
            p.stop()
    sweeper = sweeper_figures(log_events([victim, *procs], killed_epoch), replacement.name) if replacement else {}
    finished = dict(AgentRun.objects.filter(pk__in=run_ids).values_list("pk", "finished_at"))
    recovery = {}
    for pk in sorted(held):
        token = at_kill[pk][1]
        reclaimed = next((t for t, _, tok, _ in timeline[pk] if t > killed_at and tok and tok != token), None)
        recovery[pk] = {"status_at_kill": at_kill[pk][0], "steps_at_kill": at_kill[pk][2],
                        "reclaimed_after_s": None if reclaimed is None else reclaimed - killed_at,
                        "ended_after_s": (finished[pk] - killed_wall).total_seconds() if finished[pk] else None}
    # Requests per run at the fake, and which of them repeat a call of a step saved before the kill.
    requests = [r for r in fake.requests() if r[3] in {str(pk) for pk in run_ids}]
    per_run = Counter(int(r[3]) for r in requests)
    per_agent = Counter((int(r[3]), r[4]) for r in requests)
    excess = {pk: per_run.get(pk, 0) - CALLS_PER_ALERT for pk in run_ids}
    repeated_saved = [(pk, agent) for (pk, agent), n in per_agent.items()
                      if n > 1 and step_of(agent) <= at_kill.get(pk, ("", "", 0))[2]]
    # What the dead worker had sent for the step it was in: its requests before the kill.
    unsaved_sent = Counter(int(r[3]) for r in requests if r[0] < killed_at and int(r[3]) in held
                           and step_of(r[4]) == at_kill[int(r[3])][2] + 1)
    mismatched = {pk: (excess[pk], unsaved_sent.get(pk, 0)) for pk in run_ids
                  if excess[pk] != (unsaved_sent.get(pk, 0) if pk in held else 0)}
    duplicate_keys = (AgentCall.objects.filter(run_id__in=run_ids).values("run_id", "key")
                      .annotate(n=Count("id")).filter(n__gt=1).count())
    reclaims = [r["reclaimed_after_s"] for r in recovery.values() if r["reclaimed_after_s"] is not None]
    ends = [r["ended_after_s"] for r in recovery.values() if r["ended_after_s"] is not None]
    statuses = dict(Counter(AgentRun.objects.filter(pk__in=run_ids).values_list("status", flat=True)))
    connections.close_all()
    return {
        "backend": "embedded" if embedded else "pg", "alerts": len(rows), "runs": statuses,
        "threads": 8 if embedded else args.kill_threads, "workers": 1 if embedded else 2,
        "completed_at_kill": completed_before_kill,
        "completed_just_after_kill": Counter(s[0] for s in at_kill.values())["completed"],
        "held": len(held), "held_running": sum(1 for pk in held if at_kill[pk][0] == "running"),
        "held_queued": sum(1 for pk in held if at_kill[pk][0] == "queued"),
        "not_reclaimed": sum(1 for r in recovery.values() if r["reclaimed_after_s"] is None),
        "worst_reclaim_s": max(reclaims, default=None), "median_reclaim_s": statistics.median(reclaims) if reclaims else None,
        "worst_end_s": max(ends, default=None), "recovery": recovery,
        "excess_distribution": dict(sorted(Counter(excess.values()).items())),
        "excess_distribution_held": dict(sorted(Counter(excess[pk] for pk in held).items())),
        "requests": len(requests), "requests_cut": sum(1 for r in requests if r[6]),
        "repeated_saved_calls": len(repeated_saved), "excess_mismatched": mismatched,
        "duplicate_call_keys": duplicate_keys, "wall_s": time.monotonic() - started,
        "tasks_received": [p.tasks_received() for p in [victim, *workers_of(procs)]], **sweeper,
        "remaining_at_kill": sum(1 for s in at_kill.values() if s[0] in AgentRun.ACTIVE),
        "load_before": load_before, "load_after": load(), "audit": verify_audit_chain(env),
    }


def embedded_kill_child(config: dict) -> None:
    """--child: the embedded kill trial, in a process whose Django uses SQLite and the
    filesystem broker under a fresh VAR_DIR."""
    from fraud_pipeline import generate_alerts

    var_dir = tempfile.mkdtemp(prefix="casework-runtime-bench-embedded-")
    try:
        setup_django(var_dir, embedded=True)
        made = build_history()
        args = argparse.Namespace(**config["args"])
        fake = FakeServer.attach(config["root"], config["pid"])
        result = kill_trial(True, generate_alerts(args.alerts, seed=ALERT_SEED), fake, args, var_dir)
        result["template"] = made
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        result = {"backend": "embedded", "skipped": f"failed: {type(exc).__name__}: {str(exc)[:600]}"}
    finally:
        if not config["args"].get("keep"):
            shutil.rmtree(var_dir, ignore_errors=True)
    Path(config["out"]).write_text(json.dumps(result, default=str))


def run_embedded_kill(fake: FakeServer, args, var_dir: str) -> dict:
    out = Path(var_dir) / "embedded-kill.json"
    config = {"root": fake.root, "pid": fake.pid, "out": str(out),
              "args": {k: v for k, v in vars(args).items() if isinstance(v, (int, float, str, bool))}}
    with (Path(var_dir) / "embedded-child.log").open("w") as child_log:
        subprocess.run([sys.executable, __file__, "--child", json.dumps(config)], cwd=REPO, stdout=child_log,
                       stderr=subprocess.STDOUT, timeout=args.timeout + 600, check=False)
    if not out.exists():
        return {"backend": "embedded", "skipped": "failed: the child wrote no result:\n"
                + (Path(var_dir) / "embedded-child.log").read_text()[-1500:]}
    return json.loads(out.read_text())


# --- Profile --------------------------------------------------------------------------------------

# Where the GIL holder's time goes, by the first of these found on a sampled stack (in this
# order, so an import inside an SDK call counts as an import).
PROFILE_BUCKETS = (
    ("imports on first use", ("_find_and_load ",)),
    ("openai provider: the SDK's raw request over aiohttp (acomplete)", ("acomplete ",)),
    ("runtime around each call (prompt, schema, retry, spans, metrics, parsing)", ("arun_agent ",)),
    ("run thread: execute_run (claim, similar cases, step and run writes, finish)", ("execute_run ",)),
    ("event loop itself (aiohttp callbacks, scheduling, timers)", ("BaseEventLoop._run_once ", "_run_once ")),
    ("audit sequencer thread", ("_Sequencer", "sequencer")),
    ("Celery / kombu / Redis", ("celery/", "kombu/", "redis/")),
)


def summarise_profile(path: Path, top: int = 25) -> dict:
    """Buckets (above), and the top functions by own samples (innermost frame) and by total
    samples (anywhere on the stack), of the samples not importing (shares of all samples)."""
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
        label = next((label for label, needles in PROFILE_BUCKETS if any(needle in stack for needle in needles)),
                     "other")
        buckets[label] += n
        if label != PROFILE_BUCKETS[0][0]:  # the top lists: steady state, imports left out
            own[frames[-1]] += n
            for frame in set(frames):
                total[frame] += n
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
    commit = os.environ.get("RUNTIME_BENCH_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    return {"nproc": os.cpu_count(), "cpu": cpu, "commit": commit or "unknown", "python": platform.python_version(), "postgresql": pg.split()[0],
            "pg_url": PG, "max_connections": pg_connection_room()[0],
            "redis": redis.Redis.from_url(BROKER).info("server")["redis_version"], "django": django.get_version(),
            "celery": celery.__version__, "openai": openai.__version__,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}


# Quoted from the issue: the runtime before the rebuild (threads, one blocking call per thread,
# one transaction per call, the audit chain locked by every writer).
BEFORE = {"calls_per_s": 41, "ratio": 0.16, "alerts_per_s": 6.8, "critical": 2.24}
BEFORE_TEXT = ("**Before the rebuild** (from issue 8): 200 alerts at 200 ms through one threads worker, 1,200 "
               "calls in 29.6 s = 41 calls/s, 6.8 alerts/s; the bare AsyncOpenAI client 252 calls/s, so a ratio of "
               "0.16. One alert's critical path 2.24 x the latency. 101 SQL statements in 8 transactions per alert "
               "run (now 15 in 3, pinned by tests/fraud/test_pipeline_writes.py).")


def pick_quietest(sittings: list[dict]) -> dict:
    """From one or more sittings' results, each trial's run with the lowest load before it
    (among those that ran); each keeps its own sitting's bare figures and date."""
    chosen: dict = {"machine": sittings[-1]["machine"], "sittings": len(sittings)}
    candidates: dict[tuple, list[dict]] = {}
    for s in sittings:
        when = f"{s['machine']['date'][11:16]}, {s['machine'].get('commit', '?')[:7]}"
        for t in s.get("trials", []):
            t["sitting"] = when
            candidates.setdefault((t["provider"], t["threads"], t.get("warm", False)), []).append(t)
        for key in ("critical", "kill-pg", "kill-embedded"):
            if s.get(key):
                s[key]["sitting"] = when
                candidates.setdefault((key,), []).append(s[key])
        if s.get("bare"):
            candidates.setdefault(("bare",), []).append({**s["bare"], "date": s["machine"]["date"], "sitting": when,
                                                         "load_before": s["bare"]["best"]["httpx"]["load_before"]})

    def best(items: list[dict]) -> dict:
        ran = [t for t in items if "skipped" not in t] or items
        return min(ran, key=lambda t: t.get("load_before", 99))

    chosen["trials"] = sorted((best(v) for k, v in candidates.items() if len(k) == 3),
                              key=lambda t: (t["provider"] != "openai", t.get("warm", False), t["threads"]))
    for key in ("critical", "kill-pg", "kill-embedded", "bare"):
        if (key,) in candidates:
            chosen[key] = best(candidates[(key,)])
    chosen["bare_all"] = [dict(b, date=b["date"]) for b in candidates.get(("bare",), [])]
    return chosen


def sitting(t: dict) -> str:
    return f" (sitting {t['sitting']})" if t.get("sitting") else ""


def yes(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def fmt_ms(value) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def fmt_s(value) -> str:
    return "-" if value is None else f"{value:.1f} s"


def report(args, results: dict) -> str:
    for t in results.get("trials", []):  # a sitting without (1): no ratios
        if "calls_per_s" in t and "ratio_httpx" not in t:
            t.update({"bare_httpx": float("nan"), "bare_aiohttp": float("nan"), "ratio_httpx": float("nan"),
                      "ratio_aiohttp": float("nan")})
    m = results["machine"]
    lat = args.latency
    out = [f"Machine: {m['nproc']} CPUs ({m['cpu']}), shared with other engineers' test suites; Python "
           f"{m['python']}, PostgreSQL {m['postgresql']} (max_connections {m['max_connections']}), Redis "
           f"{m['redis']}, Django {m['django']}, Celery {m['celery']}, openai {m['openai']}; "
           + (f"best quiet runs of {results['sittings']} sittings, the last {m['date']}"
              if results.get("sittings", 1) > 1 else f"run {m['date']}")
           + ". Load: the 1-minute load average before -> after each trial.", "", BEFORE_TEXT, ""]
    bare = results.get("bare")
    trials = [t for t in results.get("trials", []) if t["provider"] == "openai"]
    offline = [t for t in results.get("trials", []) if t["provider"] == "offline"]
    main_trial = next((t for t in trials if t["threads"] == 32 and not t.get("warm") and "skipped" not in t),
                      None) or next((t for t in trials if "skipped" not in t), None)
    warm_trial = next((t for t in trials if t.get("warm") and "skipped" not in t), None)
    best_offline = max((t for t in offline if "skipped" not in t), key=lambda t: t["alerts_per_s"], default=None)
    crit, kills = results.get("critical"), [results.get(k) for k in ("kill-pg", "kill-embedded") if results.get(k)]

    # Summary against the targets.
    rows = ["| figure | before (issue) | now | target | |", "|---|---|---|---|---|"]
    if main_trial:
        rows += [
            f"| LLM calls/s, {args.alerts} alerts at {lat:g} ms, production set-up ({main_trial['threads']} threads x 2) | 41 | "
            f"{main_trial['calls_per_s']:.0f} | | |",
            f"| ratio to the bare `AsyncOpenAI()` (httpx, {main_trial['bare_httpx']:.0f} calls/s) | 0.16 | "
            f"{main_trial['ratio_httpx']:.2f} | >= 0.6 (goal 0.8) | {yes(main_trial['ratio_httpx'] >= 0.6)} |",
            f"| ratio to the bare `AsyncOpenAI(http_client=DefaultAioHttpClient())` ({main_trial['bare_aiohttp']:.0f}"
            f" calls/s) | - | {main_trial['ratio_aiohttp']:.2f} | >= 0.6 (goal 0.8) | "
            f"{yes(main_trial['ratio_aiohttp'] >= 0.6)} |",
            f"| alerts/s, fake at {lat:g} ms | 6.8 | {main_trial['alerts_per_s']:.1f} | | |"]
    if warm_trial:
        rows += [f"| the same with warm workers ({warm_trial['threads']} threads x 2): calls/s; ratio httpx / aiohttp "
                 f"| - | {warm_trial['calls_per_s']:.0f}; {warm_trial['ratio_httpx']:.2f} / "
                 f"{warm_trial['ratio_aiohttp']:.2f} | >= 0.6 | {yes(warm_trial['ratio_httpx'] >= 0.6)} (httpx); "
                 f"{yes(warm_trial['ratio_aiohttp'] >= 0.6)} (aiohttp) |"]
    if best_offline:
        rows.append(f"| alerts/s, offline provider ({best_offline['threads']} threads x 2) | - | "
                    f"{best_offline['alerts_per_s']:.1f} | >= 25 | {yes(best_offline['alerts_per_s'] >= 25)} |")
    if crit and "skipped" not in crit:
        # The target is the LLM critical path (first request sent to last answered);
        # the whole run (claim to end: prepare, writes, finish) is shown beside it.
        rows.append(f"| one alert's LLM critical path / latency (median of {crit['repeats']}); the whole run | 2.24 | "
                    f"{crit['llm_span_ratio_median']:.2f}; {crit['ratio_median']:.2f} | <= 2.2 | "
                    f"{yes(crit['llm_span_ratio_median'] <= 2.2)} |")
    for k in kills:
        if "skipped" in k:
            rows.append(f"| kill test, {k['backend']} | - | not run: {k['skipped'][:200]} | | |")
            continue
        name = "PostgreSQL + Redis" if k["backend"] == "pg" else "embedded (SQLite, filesystem broker)"
        done = k["runs"].get("completed", 0)
        ok = (done == k["alerts"] and k["worst_reclaim_s"] is not None and k["worst_reclaim_s"] <= 20
              and k["not_reclaimed"] == 0 and not k["repeated_saved_calls"] and not k["duplicate_call_keys"])
        rows.append(f"| kill test, {name}: completed; worst recovery; finished calls repeated | 199/200, 198/200 "
                    f"(runs lost) | {done}/{k['alerts']}; {fmt_s(k['worst_reclaim_s'])}; "
                    f"{k['repeated_saved_calls'] + k['duplicate_call_keys']} | {k['alerts']}/{k['alerts']}; "
                    f"<= 20 s; 0 | {yes(ok)} |")
    if len(rows) > 2:  # a sitting of --pairs only has its own table below
        out += ["**Against issue 8's targets**", "", *rows, ""]

    if results.get("bare_all") and len(results["bare_all"]) > 1:
        out += [f"**(1) Bare client**, {results['bare_all'][0]['best']['httpx']['concurrency']} requests in flight, "
                f"{results['bare_all'][0]['best']['httpx']['seconds']:g} s per round, the fraud agents' own requests "
                f"(median {results['bare_all'][0]['request_bytes_median']:,.0f} bytes of messages and schema), fake at "
                f"{lat:g} ms; per sitting, the best of its rounds (half before (2), half after); each (2) trial's "
                "ratio is against its own sitting's figures. calls/s (client CPU per call):", "",
                "| sitting (UTC, commit) | " + " | ".join(BARE_WAYS.values()) + " | load |", "|---|---|---|---|---|"]
        for b in results["bare_all"]:
            out.append(f"| {b['sitting']} | " + " | ".join(
                f"**{b['best'][w]['calls_per_s']:.0f}** ({b['best'][w]['client_cpu_per_call_ms']:.1f} ms)"
                for w in BARE_WAYS) + f" | {b['best']['httpx']['load_before']:.1f} |")
        out.append("")
        bare = None
    if bare:
        b = bare["best"]
        out += [f"**(1) Bare client**, the same sitting as (2): {b['httpx']['concurrency']} requests in flight for "
                f"{b['httpx']['seconds']:g} s, the fraud agents' own requests (median "
                f"{bare['request_bytes_median']:,.0f} bytes of messages and schema), fake at {lat:g} ms; best of "
                f"{bare['rounds']} interleaved rounds each, half before (2) and half after ({bare['date'] if 'date' in bare else m['date']}):", "",
                "| client | calls/s | all rounds | client CPU per call | max in flight | load |",
                "|---|---|---|---|---|---|"]
        for way, label in BARE_WAYS.items():
            r = b[way]
            out.append(f"| {label} | **{r['calls_per_s']:.0f}** | {', '.join(map(str, bare['all'][way]))} | "
                       f"{r['client_cpu_per_call_ms']:.2f} ms | {r['max_in_flight']} | {r['load_before']:.1f} -> "
                       f"{r['load_after']:.1f} |")
        out.append("")
    if trials:
        out += [f"**(2) {args.alerts} alerts, fake LLM at {lat:g} ms**, the production set-up (two workers of N "
                f"threads, one beat, LLM_MAX_CONCURRENCY={args.max_concurrency}), drained: the alerts created while no "
                "worker runs, then the set-up started (cold: each worker builds its LLM client before it consumes), or "
                "(warm) the set-up warmed up with 12 alerts, its consumers cancelled while the alerts are created, "
                "then resumed. LLM calls/s: the runs' "
                "requests at the fake, first received to last answered; ratios against (1) of the same sitting. "
                "Worker CPU: both workers, from the first run's start to the last run's end; PostgreSQL's: the "
                "server processes of the benchmark database's connections over the same window (not the server's "
                "background processes, nor other databases' backends).", "",
                "| threads per worker | LLM calls/s | ratio to bare httpx / aiohttp | alerts/s | run p50 / p95 "
                "| max in flight | completed | runs per worker | worker CPU per call | PostgreSQL CPU per alert "
                "| machine busy | load | audit chain |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for t in trials:
            if "skipped" in t:
                out.append(f"| {t['threads']} | not run: {t['skipped'][:200]} |" + " |" * 11)
                continue
            out.append(f"| {t['threads']}{', warm' if t.get('warm') else ''}{sitting(t)} | **{t['calls_per_s']:.0f}** ({t['llm_requests']:,} in "
                       f"{t['llm_window_s']:.1f} s) | **{t['ratio_httpx']:.2f}** / **{t['ratio_aiohttp']:.2f}** | "
                       f"{t['alerts_per_s']:.1f} | {t['run_p50_s'] * 1000:,.0f} / {t['run_p95_s'] * 1000:,.0f} ms | "
                       f"{t['max_in_flight']} | {t['runs'].get('completed', 0)}/{t['alerts']} | "
                       f"{' + '.join(map(str, t['tasks_received']))} | {t['worker_cpu_ms_per_call']:.1f} ms | "
                       f"{fmt_ms(t.get('postgres_cpu_ms_per_alert'))} | "
                       f"{t['machine_busy']:.0%} | {t['load_before']:.1f} -> {t['load_after']:.1f} | "
                       f"{audit_cell(t['audit'])} |")
        out.append("")
    if results.get("pairs"):
        out += pairs_report(args, results["pairs"])
    if offline:
        out += [f"**(3) {args.alerts} alerts, offline provider**, the same set-up, drained; first run's start to "
                "last run's end:", "",
                "| threads per worker | alerts/s | wall | run p50 / p95 | completed | runs per worker "
                "| worker CPU per alert | machine busy | load | audit chain |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for t in offline:
            if "skipped" in t:
                out.append(f"| {t['threads']} | not run: {t['skipped'][:200]} |" + " |" * 8)
                continue
            out.append(f"| {t['threads']}{sitting(t)} | **{t['alerts_per_s']:.1f}** | {t['wall_s']:.1f} s | "
                       f"{t['run_p50_s'] * 1000:,.0f} / {t['run_p95_s'] * 1000:,.0f} ms | "
                       f"{t['runs'].get('completed', 0)}/{t['alerts']} | {' + '.join(map(str, t['tasks_received']))} | "
                       f"{t['worker_cpu_ms_per_alert']:.0f} ms | {t['machine_busy']:.0%} | {t['load_before']:.1f} -> "
                       f"{t['load_after']:.1f} | {audit_cell(t['audit'])} |")
        out.append("")
    if crit:
        if "skipped" in crit:
            out += [f"**(4) One alert's critical path**: not run: {crit['skipped'][:300]}", ""]
        else:
            out += [f"**(4) One alert's critical path**, fake at {lat:g} ms, one alert at a time through the "
                    f"production set-up after {WARM_UP} warm-up alerts: the run's wall time (claim to end: prepare, two "
                    f"LLM rounds, two step writes, finish) / latency, median of {crit['repeats']}: "
                    f"**{crit['ratio_median']:.2f}x** (min {crit['ratio_min']:.2f}, max {crit['ratio_max']:.2f}; "
                    f"the LLM part alone, first request sent to last answered, {crit['llm_span_ratio_median']:.2f}x; "
                    f"from alert_create's commit to the run's end {crit['created_to_end_ratio_median']:.2f}x). "
                    + ("Medians from the runs' traces: " + ", ".join(
                        f"{k} {v:.0f} ms" for k, v in crit.get("segments_median_ms", {}).items()) + ". "
                       if crit.get("segments_median_ms") else "")
                    + f"Load {crit['load_before']:.1f} -> {crit['load_after']:.1f}; audit chain "
                    f"{audit_cell(crit['audit'])}.", ""]
    if kills:
        out += [f"**(5) Kill test**: {args.alerts} alerts at {lat:g} ms through the fake, RUN_STALE_AFTER_SECONDS=10, "
                "RUN_QUEUED_STALE_AFTER_SECONDS=10, RUN_SCAN_INTERVAL_SECONDS=2; when a third of the runs had "
                "completed, one worker process got SIGKILL and a replacement was started. Held by the dead worker: "
                "runs it was running or had taken from the broker (Redis: its unacknowledged messages; filesystem: "
                "active runs with no message left in the queue folder). Recovery: from the kill until the run was "
                "claimed again (polled every 0.1 s) / until it ended. Excess requests: a run's requests at the fake "
                "minus 6; each should be a call of the step that died unsaved.", "",
                "| set-up | completed | held by the dead worker (running + queued) | after the kill: replacement "
                "ready; sweeper re-sent stale runs (runs); runs still to do | recovery: worst (median) / worst end "
                "| AgentCall rows per (run, key) > 1 | excess requests per run (runs) | calls of saved steps "
                "repeated | load | audit chain |", "|---|---|---|---|---|---|---|---|---|---|"]
        for k in kills:
            if "skipped" in k:
                out.append(f"| {k['backend']} | not run: {k['skipped'][:300]} |" + " |" * 8)
                continue
            name = ("PostgreSQL + Redis, two workers of "
                    f"{k['threads']} threads + beat" if k["backend"] == "pg"
                    else "embedded: SQLite + filesystem://, one worker `--pool=threads --concurrency=8 --beat`")
            dist = ", ".join(f"{'+' if int(e) > 0 else ''}{e}: {n}" for e, n in k["excess_distribution"].items())
            mism = f"; {len(k['excess_mismatched'])} runs' excess not explained" if k["excess_mismatched"] else ""
            out.append(f"| {name}{sitting(k)} | **{k['runs'].get('completed', 0)}/{k['alerts']}** (kill at "
                       f"{k['completed_at_kill']} completed) | {k['held']} ({k['held_running']} + {k['held_queued']})"
                       f" | {fmt_s(k.get('replacement_ready_s'))}; "
                       + (", ".join(f"{t:.1f} s ({n})" for t, n in k.get("stale_resends", [])) or "none")
                       + f"; {k.get('remaining_at_kill', '-')}"
                       f" | **{fmt_s(k['worst_reclaim_s'])}** ({fmt_s(k['median_reclaim_s'])}) / "
                       f"{fmt_s(k['worst_end_s'])} | {k['duplicate_call_keys']} | {dist}{mism} | "
                       f"{k['repeated_saved_calls']} | {k['load_before']:.1f} -> {k['load_after']:.1f} | "
                       f"{audit_cell(k['audit'])} |")
        out.append("")
    profiled = [t for t in trials if t.get("profile")]
    if profiled:
        out += ["Where the first worker's time goes in (2) (`py-spy record --gil`: samples of the thread holding "
                "the GIL, from the first run's start to the last run's end):", "",
                "| part | " + " | ".join(f"threads {t['threads']}{', warm' if t.get('warm') else ''}" for t in profiled)
                + " |",
                "|---|" + "---|" * len(profiled)]
        shares = [{label: n / t["profile"]["samples"] for label, n in t["profile"]["buckets"]} for t in profiled]
        for label in [label for label, _ in PROFILE_BUCKETS] + ["other"]:
            out.append(f"| {label} | " + " | ".join(f"{s.get(label, 0):.0%}" for s in shares) + " |")
        t = profiled[-1]
        out += ["", f"Top functions by own samples, imports left out (threads {t['threads']}"
                f"{', warm' if t.get('warm') else ''}): "
                + "; ".join(f"`{frame}` {n / t['profile']['samples']:.0%}" for frame, n in t["profile"]["own"][:10])
                + ".", ""]
    return "\n".join(out)


def audit_cell(audit: dict) -> str:
    if audit["ok"]:
        return f"intact ({audit['entries']:,} entries, 0 pending)"
    return f"FAILED: {audit['output']}"


def room_for(threads: int) -> str | None:
    """Why a set-up of two workers of N threads cannot run on this server, or None."""
    limit, used = pg_connection_room()
    if connections_needed(threads) + used > limit:
        # Past max_connections the workers' tasks fail with "too many clients" and their runs
        # wait for the sweeper: a stalled trial, not a figure.
        return (f"needs about {connections_needed(threads)} PostgreSQL connections; the server allows {limit} "
                f"and {used} are in use")
    return None


def print_profiles(results: dict) -> None:
    for t in results.get("trials", []):
        if t.get("profile"):
            print(f"\nProfile, threads {t['threads']}: {t['profile']['samples']} samples (GIL holder)")
            for label, n in t["profile"]["buckets"]:
                print(f"    {n / t['profile']['samples']:6.1%}  {label}")
            for label in ("own", "total"):
                print(f"  top by {label}:")
                for frame, n in t["profile"][label][:25]:
                    print(f"    {n / t['profile']['samples']:6.1%}  {frame}")


def set_ratios(results: dict) -> None:
    """Each (2) trial's calls/s against the best bare figures of its sitting."""
    bare = results.get("bare", {}).get("best")
    for t in results["trials"]:
        if bare and t["provider"] == "openai" and "calls_per_s" in t:
            t.update({"bare_httpx": bare["httpx"]["calls_per_s"], "bare_aiohttp": bare["aiohttp"]["calls_per_s"],
                      "ratio_httpx": t["calls_per_s"] / bare["httpx"]["calls_per_s"],
                      "ratio_aiohttp": t["calls_per_s"] / bare["aiohttp"]["calls_per_s"]})


def run_pairs(args, rows: list, fake: FakeServer, var_dir: str, save, results: dict) -> dict:
    """--pairs N: N times a bare round of each client (1), then one trial of the production set-up
    (2) at the first --threads value. A trial's calls/s moves by up to a fifth between trials
    minutes apart on this shared machine, and so does a bare round's: a single trial against the
    best of several bare rounds compares two different statistics. Here both sides are the same
    statistic of interleaved runs: the ratio of the medians, and the median of each pair's ratio
    (the issue's own figure was two trials against two bare runs)."""
    threads = int(next(n for n in args.threads.split(",") if n))
    pairs = []
    for n in range(args.pairs):
        bare = {way: bare_once(way, fake, fraud_requests(), args.bare_concurrency, args.bare_seconds)
                for way in BARE_WAYS}
        log.info("(2p) pair %d: bare httpx %.0f, aiohttp %.0f calls/s; %d alerts, two workers of %d threads, load %.1f",
                 n + 1, bare["httpx"]["calls_per_s"], bare["aiohttp"]["calls_per_s"], args.alerts, threads, load())
        try:
            result = trial("openai", threads, rows, fake, args, var_dir)
        except RuntimeError as exc:
            log.error("    failed: %s", exc)
            pairs.append({"bare": bare, "skipped": f"failed: {str(exc)[:300]}"})
            continue
        result.pop("profile", None)
        pairs.append({"bare": bare, "trial": result,
                      "ratio_httpx": result["calls_per_s"] / bare["httpx"]["calls_per_s"],
                      "ratio_aiohttp": result["calls_per_s"] / bare["aiohttp"]["calls_per_s"]})
        log.info("    %.0f calls/s: ratio httpx %.2f, aiohttp %.2f", result["calls_per_s"], pairs[-1]["ratio_httpx"],
                 pairs[-1]["ratio_aiohttp"])
        results["pairs"] = {"threads": threads, "pairs": pairs}
        save()
    done = [p for p in pairs if "trial" in p]
    summary: dict = {"threads": threads, "pairs": pairs}
    if done:
        median = statistics.median
        trial_median = median(p["trial"]["calls_per_s"] for p in done)
        for way in ("httpx", "aiohttp"):
            bare_median = median(p["bare"][way]["calls_per_s"] for p in done)
            summary[way] = {"bare_median": bare_median, "trial_median": trial_median,
                            "ratio_of_medians": trial_median / bare_median,
                            "median_ratio": median(p[f"ratio_{way}"] for p in done)}
    return summary


def pairs_report(args, summary: dict) -> list[str]:
    done = [p for p in summary["pairs"] if "trial" in p]
    if not done:
        return []
    out = [f"**(2p) {len(done)} interleaved pairs** (`--pairs {args.pairs}`): a bare round of each client, then "
           f"{args.alerts} alerts through the production set-up ({summary['threads']} threads x 2), cold; the ratio of "
           "the medians, and the median of the pairs' ratios.", "",
           "| pair | bare httpx / aiohttp calls/s | production set-up calls/s | ratio httpx / aiohttp | worker CPU per call "
           "| PostgreSQL CPU per alert | machine busy | completed | audit chain |",
           "|---|---|---|---|---|---|---|---|---|"]
    for n, p in enumerate(summary["pairs"], 1):
        if "trial" not in p:
            out.append(f"| {n} | {p['bare']['httpx']['calls_per_s']:.0f} / {p['bare']['aiohttp']['calls_per_s']:.0f} "
                       f"| {p['skipped']} | | | | | | |")
            continue
        t = p["trial"]
        audit = t["audit"]
        out.append(f"| {n} | {p['bare']['httpx']['calls_per_s']:.0f} / {p['bare']['aiohttp']['calls_per_s']:.0f} | "
                   f"{t['calls_per_s']:.0f} | {p['ratio_httpx']:.2f} / {p['ratio_aiohttp']:.2f} | "
                   f"{t['worker_cpu_ms_per_call']:.1f} ms | {t['postgres_cpu_ms_per_alert']:.1f} ms | "
                   f"{t['machine_busy']:.0%} | {t['runs'].get('completed', 0)}/{t['alerts']} | "
                   f"{'intact' if audit.get('ok') else 'BROKEN'} ({audit.get('entries', 0):,} entries, "
                   f"{audit.get('pending', 0)} pending) |")
    h, a = summary["httpx"], summary["aiohttp"]
    out += ["", f"Medians: bare httpx {h['bare_median']:.0f}, aiohttp {a['bare_median']:.0f}, production set-up "
                f"{h['trial_median']:.0f} calls/s. **Ratio of the medians: {h['ratio_of_medians']:.2f} (httpx) / "
                f"{a['ratio_of_medians']:.2f} (aiohttp); median of the pairs' ratios: {h['median_ratio']:.2f} / "
                f"{a['median_ratio']:.2f}.**", ""]
    return out


def run_sitting(args, var_dir: str) -> dict:
    from fraud_pipeline import generate_alerts

    phases = set(args.phases.split(","))
    results: dict = {"machine": machine(), "trials": [], "load_start": load()}
    save = (lambda: Path(args.json).write_text(json.dumps(results, indent=1, default=str))) if args.json else (
        lambda: None)
    fake = FakeServer(args.latency / 1000, var_dir)
    try:
        if "bare" in phases:
            log.info("(1) bare clients, %d in flight for %g s, %d rounds ...", args.bare_concurrency,
                     args.bare_seconds, args.bare_rounds)
            # Half the rounds now, half after the (2) trials: the ceiling is the best of them.
            results["bare"] = bare_client(fake, args.bare_concurrency, args.bare_seconds, (args.bare_rounds + 1) // 2)
            save()
        if phases & {"fake", "offline", "critical", "kill-pg"}:
            log.info("Preparing %s (migrate, history) and its template ...", DB)
            results["template"] = prepare_template()
        rows = generate_alerts(args.alerts, seed=ALERT_SEED)
        if args.pairs:
            results["pairs"] = run_pairs(args, rows, fake, var_dir, save, results)
            phases -= {"bare", "fake"}
        plan = [("openai", int(n), False) for n in args.threads.split(",") if n and "fake" in phases]
        plan += [("openai", int(n), True) for n in args.warm_threads.split(",") if n and "fake" in phases]
        plan += [("offline", int(n), False) for n in args.offline_threads.split(",") if n and "offline" in phases]
        for provider, threads, warm in plan:
            if "bare" in phases and provider == "offline" and args.bare_rounds > 1 and "after" not in results["bare"]:
                log.info("(1) bare clients again, after (2) ...")
                results["bare"] = bare_client(fake, args.bare_concurrency, args.bare_seconds, args.bare_rounds // 2,
                                              before=results["bare"])
                results["bare"]["after"] = True
                set_ratios(results)
                save()
            log.info("(%s) %d alerts, two workers of %d threads%s, provider %s, load %.1f ...",
                     "2" if provider == "openai" else "3", args.alerts, threads, ", warm" if warm else "", provider,
                     load())
            why = room_for(threads)
            if why:
                log.warning("    skipped: %s", why)
                results["trials"].append({"provider": provider, "threads": threads, "warm": warm, "skipped": why})
                continue
            try:
                result = trial(provider, threads, rows, fake, args, var_dir, warm=warm)
            except RuntimeError as exc:
                log.error("    failed: %s", exc)
                result = {"provider": provider, "threads": threads, "warm": warm,
                          "skipped": f"failed: {str(exc)[:300]}"}
            log.info("    %s", {k: v for k, v in result.items() if k != "profile"})
            results["trials"].append(result)
            set_ratios(results)
            save()
        if "critical" in phases:
            log.info("(4) one alert at a time, %d times, load %.1f ...", args.critical, load())
            try:
                results["critical"] = critical_path(fake, args, var_dir)
            except RuntimeError as exc:
                results["critical"] = {"skipped": f"failed: {str(exc)[:300]}"}
            log.info("    %s", results["critical"])
            save()
        if "kill-pg" in phases:
            log.info("(5) kill test, PostgreSQL + Redis, load %.1f ...", load())
            why = room_for(args.kill_threads)
            try:
                results["kill-pg"] = ({"backend": "pg", "skipped": why} if why else
                                      kill_trial(False, rows, fake, args, var_dir))
            except RuntimeError as exc:
                results["kill-pg"] = {"backend": "pg", "skipped": f"failed: {str(exc)[:600]}"}
            log.info("    %s", {k: v for k, v in results["kill-pg"].items() if k != "recovery"})
            save()
        if "kill-embedded" in phases:
            log.info("(5) kill test, embedded defaults (child process), load %.1f ...", load())
            results["kill-embedded"] = run_embedded_kill(fake, args, var_dir)
            log.info("    %s", {k: v for k, v in results["kill-embedded"].items() if k != "recovery"})
            save()
    finally:
        fake.stop()
        if not args.keep:
            from django.db import connections

            connections.close_all()
            pg_admin(f'DROP DATABASE IF EXISTS "{TEMPLATE_DB}" WITH (FORCE)',
                     f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        flush_broker()
    results["load_end"] = load()
    save()
    return results


def main() -> None:
    global PG
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg", default=PG, help=f"The PostgreSQL server, no database ({PG}; RUNTIME_BENCH_PG).")
    parser.add_argument("--latency", type=float, default=200, help="The fake's latency per call, ms (200).")
    parser.add_argument("--alerts", type=int, default=200, help="Alerts per trial (200).")
    parser.add_argument("--threads", default="16,32", help="(2) threads per worker, one trial each (16,32).")
    parser.add_argument("--warm-threads", default="32", help="(2) also with warm workers, one trial each (32).")
    parser.add_argument("--offline-threads", default="32", help="(3) threads per worker, one trial each (32).")
    parser.add_argument("--critical", type=int, default=7, help="(4) alerts, one at a time (7).")
    parser.add_argument("--critical-threads", type=int, default=32, help="(4) threads per worker (32).")
    parser.add_argument("--kill-threads", type=int, default=32, help="(5) threads per worker, PostgreSQL (32).")
    parser.add_argument("--max-concurrency", type=int, default=256, help="LLM_MAX_CONCURRENCY of each worker.")
    parser.add_argument("--bare-concurrency", type=int, default=256, help="(1) requests in flight (256).")
    parser.add_argument("--bare-seconds", type=float, default=5, help="(1) seconds measured per round (5).")
    parser.add_argument("--bare-rounds", type=int, default=2, help="(1) rounds of each client, interleaved (2).")
    parser.add_argument("--phases", default="bare,fake,offline,critical,kill-pg,kill-embedded",
                        help="Which to run (bare,fake,offline,critical,kill-pg,kill-embedded).")
    parser.add_argument("--pairs", type=int, default=0,
                        help="(2p) N pairs instead of (1) and (2): a bare round of each client, then a trial of the "
                             "first --threads value; the ratio of medians and the median of the pairs' ratios.")
    parser.add_argument("--timeout", type=float, default=300, help="Give up on a trial after this many s.")
    parser.add_argument("--profile", default="", help="py-spy the first worker of each (2) trial into this folder.")
    parser.add_argument("--json", default="", help="Also write the raw results to this file.")
    parser.add_argument("--merge", nargs="+", default=[], help="Report the quietest runs of these --json files.")
    parser.add_argument("--keep", action="store_true", help="Keep the databases, worker logs and traces afterwards.")
    parser.add_argument("--write-readme", action="store_true", help="Write the figures into bench/README.md.")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    PG = args.pg.rstrip("/")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.child:
        return embedded_kill_child(json.loads(args.child))
    if args.merge:
        results = pick_quietest([json.loads(Path(f).read_text()) for f in args.merge])
    else:
        if args.profile:
            Path(args.profile).mkdir(parents=True, exist_ok=True)
        # --keep keeps the worker logs and trace files too.
        var_dir = tempfile.mkdtemp(prefix="casework-runtime-bench-")
        try:
            log.info("VAR_DIR (worker logs, traces): %s", var_dir)
            setup_django(var_dir)
            results = run_sitting(args, var_dir)
        finally:
            if not args.keep:
                shutil.rmtree(var_dir, ignore_errors=True)
    text = report(args, results)
    print()
    print(text)
    print_profiles(results)
    if args.write_readme:
        write_block("runtime_throughput", text)
        print(f"\nWritten to {README.relative_to(REPO)}.")


if __name__ == "__main__":
    main()
