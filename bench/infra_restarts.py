"""Infrastructure restarts under load (issue 26). Run by hand:

    .venv/bin/python bench/infra_restarts.py [--alerts 200] [--rate 4] [--outage 120]
        [--outage-rate 1.5] [--scenarios restarts,llm_outage] [--dir /tmp/resilience/bench] [--write-readme]

Everything it uses is its own, started here and stopped at the end: a PRIVATE PostgreSQL
cluster (initdb + pg_ctl, on a free port, data under --dir; never the machine's shared
server), a private redis-server without persistence (--save "" --appendonly no), the fake
OpenAI-compatible server answering the fraud agents (bench/fraud_fake_server.py) at 300 ms
per call, and the README's production worker: two `celery -A casework worker --pool=threads
--concurrency=32` processes (one per core) and one `celery beat`, with LLM_PROVIDER=openai.
The workers and beat run under a supervisor that starts an exited one again, as systemd would.
A creator process makes --alerts fraud alerts at --rate per second through the service
(alert_create), retrying one that meets a transient database error as an API client does on a 503.

restarts:   PostgreSQL restarted (pg_ctl restart -m fast) once a third of the runs have
            completed, Redis restarted (killed and started again: every queued message
            lost) at two thirds. Reported: runs completed of --alerts, failed, duplicate
            call rows (AgentCall per run and key), LLM requests repeated (a step interrupted
            before its save is asked again), and each restart's recovery time: from the
            restart's start to the next run completing.
llm_outage: the LLM endpoint refuses connections (the fake stops listening) for --outage
            seconds once a third have completed, then listens again. Reported: completed,
            failed, runs that waited for the model, agent calls recorded as failed (retries
            spent), and the time from the endpoint's return to the last run's end.

The sweeper's deadlines are shortened (RUN_QUEUED_STALE_AFTER_SECONDS=RUN_STALE_AFTER_SECONDS=30,
RUN_SCAN_INTERVAL_SECONDS=5) so that the runs Redis lost are re-sent within the benchmark;
production keeps 120 s. --write-readme replaces the figures between the infra_restarts
markers in bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from readme_block import write_block  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FAKE_LATENCY = 0.3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- The private parts ----------------------------------------------------------------------


class PrivatePostgres:
    """A cluster of our own. PostgreSQL refuses to run as root: as root, its commands run as
    the `postgres` system user (runuser), which owns the directory."""

    def __init__(self, root: Path):
        self.dir = root / "pg"
        self.data, self.port = self.dir / "data", free_port()
        self.logfile = self.dir / "postgres.log"

    def _as_owner(self, *command: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else list(command)

    def start(self) -> None:
        if not self.data.exists():
            self.dir.mkdir(parents=True, exist_ok=True)
            if os.geteuid() == 0:
                shutil.chown(self.dir, "postgres", "postgres")
            subprocess.run(self._as_owner("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                                          "-E", "UTF8"), check=True, stdout=subprocess.DEVNULL)
        self._ctl("start")

    def _ctl(self, action: str, *extra: str) -> None:
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c max_connections=200")
        subprocess.run(self._as_owner("pg_ctl", "-D", str(self.data), "-l", str(self.logfile), "-o", options, "-w",
                                      action, *extra), check=True, stdout=subprocess.DEVNULL)

    def restart_fast(self) -> None:
        self._ctl("restart", "-m", "fast")

    def stop(self) -> None:
        subprocess.run(self._as_owner("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def url(self, db: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{db}"

    def admin(self, *statements: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            for sql in statements:
                conn.execute(sql)


class PrivateRedis:
    def __init__(self, root: Path):
        self.port, self.logfile, self.proc = free_port(), root / "redis.log", None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--logfile", str(self.logfile)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # no persistence: whatever it held is gone
            self.proc.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()


class Fake:
    def __init__(self, root: Path):
        self.proc = subprocess.Popen([sys.executable, str(REPO / "bench" / "fraud_fake_server.py"), "--latency",
                                      str(FAKE_LATENCY)], stdout=subprocess.PIPE, text=True,
                                     stderr=(root / "fake.log").open("w"))
        line = self.proc.stdout.readline()
        self.port = int(line.split()[1])

    def call(self, method: str, path: str) -> dict:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method, data=b"" if method ==
                                         "POST" else None)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"{}")

    def down(self) -> None:
        self.proc.send_signal(signal.SIGUSR1)

    def up(self) -> None:
        self.proc.send_signal(signal.SIGUSR2)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


# --- One scenario ---------------------------------------------------------------------------------


def environment(pg: PrivatePostgres, redis: PrivateRedis, fake: Fake, db: str, var_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "OPENAI_", "GOOGLE_", "LLM_",
                                                                     "DATABASE_URL", "CACHE_URL", "PROMETHEUS"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret", "FIELD_ENCRYPTION_KEYS": "YmVuY2gtb25seS1maWVsZC1rZXktbm90LWZvci1wcm8=", "VAR_DIR": str(var_dir),
        "DATABASE_URL": pg.url(db), "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis.port}/0",
        "CACHE_URL": f"redis://127.0.0.1:{redis.port}/1", "LLM_PROVIDER": "openai",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{fake.port}/v1", "OPENAI_API_KEY": "bench", "LLM_MODEL": "fake-model",
        "RUN_QUEUED_STALE_AFTER_SECONDS": "30", "RUN_STALE_AFTER_SECONDS": "30", "RUN_SCAN_INTERVAL_SECONDS": "5",
        "PYTHONUNBUFFERED": "1", "DEBUG": "false",
    })
    return env


class Supervisor:
    """The README's worker processes and beat, restarted when one exits, as systemd
    (Restart=always) or any process supervisor would: Celery 5.7 with kombu 5.7 ends a worker
    with "Unrecoverable error" when Redis is down at the moment its consumer reconnects
    (kombu's redis transport, restore_unacked on a closed connection)."""

    def __init__(self, env: dict, var_dir: Path):
        self.env, self.var_dir, self.restarts = env, var_dir, []
        celery = str(BIN / "celery")
        self.commands = {
            f"worker{n}": [celery, "-A", "casework", "worker", "--pool=threads", "--concurrency=32",
                           f"--hostname=casework{n}@%h", "--without-gossip", "--without-mingle", "--loglevel=INFO"]
            for n in (1, 2)}
        self.commands["beat"] = [celery, "-A", "casework", "beat", "--loglevel=INFO", "-s",
                                 str(var_dir / "beat-schedule")]
        self.procs = {name: self._start(name) for name in self.commands}

    def _start(self, name: str) -> subprocess.Popen:
        return subprocess.Popen(self.commands[name], cwd=REPO, env=self.env,
                                stdout=(self.var_dir / f"{name}.log").open("a"), stderr=subprocess.STDOUT,
                                start_new_session=True)

    def check(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                log(f"{name} exited ({proc.returncode}); the supervisor starts it again")
                self.restarts.append(name)
                self.procs[name] = self._start(name)

    def stop(self) -> None:
        procs = list(self.procs.values())
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


class Counts:
    """Polls the private database from outside Django, reconnecting across a restart."""

    def __init__(self, url: str):
        self.url, self.conn = url, None

    def query(self, sql: str, params=()) -> list[tuple] | None:
        import psycopg

        try:
            if self.conn is None or self.conn.closed:
                self.conn = psycopg.connect(self.url, autocommit=True, connect_timeout=2)
            return self.conn.execute(sql, params).fetchall()
        except psycopg.Error:
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            return None

    def statuses(self) -> dict[str, int] | None:
        rows = self.query("SELECT status, count(*) FROM agents_agentrun WHERE pipeline = 'fraud' GROUP BY status")
        return None if rows is None else dict(rows)


TERMINAL = ("completed", "completed_with_errors", "failed", "timed_out", "cancelled", "waiting")


def scenario(name: str, args, pg: PrivatePostgres, redis: PrivateRedis, fake: Fake, root: Path) -> dict:
    db = f"casework_{name}"
    var_dir = root / name
    shutil.rmtree(var_dir, ignore_errors=True)
    var_dir.mkdir(parents=True)
    pg.admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)', f'CREATE DATABASE "{db}"')
    env = environment(pg, redis, fake, db, var_dir)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
    fake.call("POST", "/_reset")
    import redis as redis_client

    redis_client.Redis(port=redis.port).flushall()
    supervisor = Supervisor(env, var_dir)
    time.sleep(3)  # the workers connect before the first alert
    rate = args.outage_rate if name == "llm_outage" else args.rate
    creator = subprocess.Popen([sys.executable, __file__, "--create", str(args.alerts), "--rate", str(rate)],
                               cwd=REPO, env=env, stdout=(var_dir / "creator.log").open("w"), stderr=subprocess.STDOUT)
    counts = Counts(pg.url(db))
    started = time.monotonic()
    events: dict[str, float] = {}
    wall: dict[str, float] = {}  # the same events on the database's clock (epoch seconds)
    recoveries: dict[str, float] = {}
    done_at_event: dict[str, int] = {}
    third, two_thirds = args.alerts // 3, 2 * args.alerts // 3
    last: dict[str, int] = {}
    try:
        while time.monotonic() - started < args.timeout:
            supervisor.check()
            statuses = counts.statuses()
            now = time.monotonic()
            if statuses is not None:
                last = statuses
                done = statuses.get("completed", 0) + statuses.get("completed_with_errors", 0)
                for event, at in events.items():
                    if event not in recoveries and done > done_at_event[event] and now > at:
                        recoveries[event] = now - at
                        log(f"{name}: runs complete again {recoveries[event]:.1f} s after {event}")
                if name == "restarts" and done >= third and "postgres_restart" not in events:
                    log(f"{name}: {done} completed; restarting PostgreSQL (fast)")
                    events["postgres_restart"], done_at_event["postgres_restart"] = now, done
                    wall["postgres_restart"] = time.time()
                    pg.restart_fast()
                    log(f"{name}: PostgreSQL back after {time.monotonic() - now:.1f} s")
                elif name == "restarts" and done >= two_thirds and "redis_restart" not in events:
                    log(f"{name}: {done} completed; restarting Redis (no persistence: its queue is lost)")
                    events["redis_restart"], done_at_event["redis_restart"] = now, done
                    wall["redis_restart"] = time.time()
                    redis.restart()
                elif name == "llm_outage" and done >= third and "llm_down" not in events:
                    log(f"{name}: {done} completed; the LLM endpoint refuses connections for {args.outage} s")
                    events["llm_down"], done_at_event["llm_down"] = now, done
                    wall["llm_down"] = time.time()
                    fake.down()
                if "llm_down" in events and "llm_up" not in events and now - events["llm_down"] >= args.outage:
                    log(f"{name}: the LLM endpoint listens again; {statuses}")
                    events["llm_up"], done_at_event["llm_up"] = now, done
                    wall["llm_up"] = time.time()
                    fake.up()
                ended = sum(statuses.get(s, 0) for s in TERMINAL)
                if creator.poll() is not None and ended >= args.alerts and (name != "llm_outage" or "llm_up" in events):
                    break
            time.sleep(0.1)
        elapsed = time.monotonic() - started
    finally:
        if "llm_down" in events and "llm_up" not in events:
            fake.up()
        if creator.poll() is None:
            creator.terminate()
        supervisor.stop()
    duplicates = counts.query("SELECT count(*) FROM (SELECT run_id, key FROM agents_agentcall WHERE kind = 'agent' "
                              "GROUP BY run_id, key HAVING count(*) > 1) d")[0][0]
    failed_calls = counts.query("SELECT count(*) FROM agents_agentcall WHERE status = 'error'")[0][0]
    waited = counts.query("SELECT count(DISTINCT object_id) FROM audit_auditentry "
                          "WHERE action = 'agent.run_waiting_for_model'")[0][0]
    cases = counts.query("SELECT count(*) FROM fraud_alert")[0][0]
    last_end = counts.query("SELECT extract(epoch FROM max(finished_at) - min(created_at)) FROM agents_agentrun "
                            "WHERE pipeline = 'fraud'")[0][0]
    requests = fake.call("GET", "/_requests")["requests"]
    ok_requests: dict[tuple, int] = {}
    for _received, _answered, status, run, _agent, call, _gone in requests:
        if status == 200 and run:
            ok_requests[(run, call)] = ok_requests.get((run, call), 0) + 1
    repeated = sum(n - 1 for n in ok_requests.values() if n > 1)
    logs = "".join((var_dir / f"worker{n}.log").read_text(errors="replace") for n in (1, 2))
    result = {
        "alerts": args.alerts, "cases": cases, "statuses": last, "elapsed_s": round(elapsed, 1),
        "first_to_last_run_s": round(float(last_end or 0), 1),
        "duplicate_call_rows": duplicates, "failed_agent_calls": failed_calls,
        "llm_requests_repeated": repeated, "llm_requests_ok": sum(ok_requests.values()),
        "runs_waited_for_model": waited, "processes_restarted_by_supervisor": supervisor.restarts,
        "recovery_s": {k: round(v, 1) for k, v in recoveries.items()},
        "interrupted_retries_logged": logs.count("interrupted by a transient database error"),
        "chat_or_task_transient_retries_logged": logs.count("transient database error ("),
    }
    # Caught up: from each event until every run created before it had ended.
    result["caught_up_s"] = {}
    for event, at in wall.items():
        if event == "llm_down":
            continue
        row = counts.query("SELECT extract(epoch FROM max(finished_at)) FROM agents_agentrun WHERE pipeline = 'fraud' "
                           "AND created_at < to_timestamp(%s)", (at,))
        if row and row[0][0] is not None:
            result["caught_up_s"][event] = round(float(row[0][0]) - at, 1)
    if "llm_up" in events:
        tail = counts.query("SELECT extract(epoch FROM max(finished_at)) FROM agents_agentrun WHERE pipeline = 'fraud'")
        result["llm_outage_s"] = round(events["llm_up"] - events["llm_down"], 1)
        result["last_run_end_after_llm_back_s"] = round(float(tail[0][0]) - wall["llm_up"], 1)
    counts.conn and counts.conn.close()
    return result


# --- The creator (a subprocess with Django) -----------------------------------------------------


def create(n: int, rate: float) -> None:
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.db import close_old_connections, connections
    from fraud_pipeline import generate_alerts

    from casework.db_transient import backoff_seconds, is_transient_db_error
    from casework.fraud.services import alert_create

    rows = generate_alerts(n)
    started = time.monotonic()
    retried = 0
    for i, row in enumerate(rows):
        wait = started + i / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        for attempt in range(60):
            try:
                close_old_connections()
                alert_create(actor="system", data=row, via="api")
                break
            except Exception as exc:  # noqa: BLE001 - a client: retry what a retry can fix, report the rest
                if not is_transient_db_error(exc):
                    print(f"alert {i}: {type(exc).__name__}: {exc} (not retried; its run is swept)", flush=True)
                    break
                retried += 1
                for conn in connections.all():
                    conn.close()
                time.sleep(backoff_seconds(attempt, cap=2.0))
    print(f"created {n} alerts in {time.monotonic() - started:.1f} s, {retried} retried", flush=True)


# --- Report -------------------------------------------------------------------------------------


def report(args, results: dict) -> str:
    lines = [f"{datetime.date.today().isoformat()}, {platform.node() or 'this machine'}, {os.cpu_count()} cores; "
             f"{args.alerts} fraud alerts created at {args.rate}/s (llm_outage: {args.outage_rate}/s), fake LLM at {int(FAKE_LATENCY * 1000)} ms per call, "
             "private PostgreSQL and Redis (no persistence), 2 worker processes (--pool=threads --concurrency=32) "
             "+ beat, LLM_PROVIDER=openai; sweeper deadlines 30 s (scan every 5 s).", "",
             "| scenario | completed | failed / timed out | duplicate call rows | LLM requests repeated | "
             "recovery | other |", "|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        s = r["statuses"]
        completed = s.get("completed", 0) + s.get("completed_with_errors", 0)
        recovery = "; ".join(
            f"{k.replace('_', ' ')}: next run done after {v} s"
            + (f", every run created before it done after {r['caught_up_s'][k]} s" if k in r.get("caught_up_s", {})
               else "") for k, v in r["recovery_s"].items() if k != "llm_down") or "—"
        other = (f"{r['interrupted_retries_logged']} run attempts interrupted and retried; "
                 f"{r['failed_agent_calls']} agent calls failed; worker processes restarted by the supervisor: "
                 f"{len(r['processes_restarted_by_supervisor'])}") if name == "restarts" else (
                 f"outage {r.get('llm_outage_s')} s; {r['runs_waited_for_model']} runs waited for the model; "
                 f"{r['failed_agent_calls']} agent calls failed; last run ended "
                 f"{r.get('last_run_end_after_llm_back_s')} s after the endpoint came back")
        lines.append(f"| {name} | {completed}/{r['alerts']} ({s.get('completed_with_errors', 0)} with errors) | "
                     f"{s.get('failed', 0)} / {s.get('timed_out', 0)} | {r['duplicate_call_rows']} | "
                     f"{r['llm_requests_repeated']} of {r['llm_requests_ok']} | {recovery} | {other} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--alerts", type=int, default=200)
    parser.add_argument("--rate", type=float, default=4.0, help="Alerts created per second (4).")
    parser.add_argument("--outage", type=float, default=120.0, help="Seconds the LLM endpoint refuses (120).")
    parser.add_argument("--outage-rate", type=float, default=1.5,
                        help="Alerts per second in llm_outage (1.5: alerts keep arriving during the outage).")
    parser.add_argument("--scenarios", default="restarts,llm_outage")
    parser.add_argument("--dir", default="/tmp/resilience/bench")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--write-readme", action="store_true")
    parser.add_argument("--create", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.create:
        return create(args.create, args.rate)
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    pg, redis = PrivatePostgres(root), PrivateRedis(root)
    shutil.rmtree(pg.dir, ignore_errors=True)
    pg.start()
    redis.start()
    fake = Fake(root)
    results = {}
    try:
        for name in args.scenarios.split(","):
            log(f"scenario {name}")
            results[name] = scenario(name, args, pg, redis, fake, root)
            log(json.dumps(results[name]))
    finally:
        fake.stop()
        redis.stop()
        pg.stop()
    text = report(args, results)
    print(text)
    (root / "results.json").write_text(json.dumps(results, indent=2))
    if args.write_readme:
        write_block("infra_restarts", text)


if __name__ == "__main__":
    main()
