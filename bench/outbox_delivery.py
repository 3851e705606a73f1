"""Outgoing webhooks under failure (issue 23): events delivered through README.md's production
worker set-up to a receiver that fails 30% of attempts, with one worker killed on the way.
Run by hand:

    .venv/bin/python bench/outbox_delivery.py [--kill sweep|midway|none] [--events 500]
        [--fail-rate 0.3] [--seed 23] [--rate 0] [--receiver-latency 20] [--threads 32]
        [--json FILE] [--write-readme]

Needs PostgreSQL on 127.0.0.1:5432 (OUTBOX_BENCH_PG, user postgres) and Redis
(OUTBOX_BENCH_BROKER, default redis://127.0.0.1:6379/15). It drops and re-creates its own
database, OUTBOX_BENCH_DB (casework_outbench), migrated, and flushes that Redis database.

- The receiver is a real HTTP server on 127.0.0.1 (a process of its own, so that it shares no
  GIL with this one). It verifies every request's signature with the Standard Webhooks
  reference package (`standardwebhooks`; a bad one would get 401 and be counted), answers after
  --receiver-latency ms, and fails --fail-rate of the attempts with a 500, 502 or 503, decided
  by a random.Random(--seed) in the order the requests arrive. It logs every request: its
  webhook-id, the body's id, whether the signature verified, its answer and when.
- The set-up is README.md's "PostgreSQL, Redis and several workers": one worker per core (two
  here), `celery -A casework worker --pool=threads --concurrency=--threads
  --hostname=casework<n>@%h --without-gossip --without-mingle`, and one `celery -A casework beat`.
- One endpoint subscribes to `case.created`. This process opens --events cases with
  `casework.cases.services.case_create` (each writes its event in its own transaction and wakes
  a worker on commit), one after another from one thread, as fast as it can (or at --rate/s).
- The kill (issue 43), once half the events have had a 2xx at the receiver. `--kill sweep`
  (the default): worker 1 runs with bench/outbox_sweep_kill.py's trap, armed then, and
  SIGKILLs itself inside a webhook sweep (right after the sweep handed the broker its first
  message, or at the end of one that had nothing to send), holding whatever it held: requests
  in flight, ETA messages of retries. `--kill midway`: the bench SIGKILLs worker 1 then, wherever
  it is. `--kill none`: no kill, the figure the kill is measured against. In both kills a new
  worker 1 is started in its place (the same command).
- Short schedules for a run of minutes, through settings (environment), not the defaults:
  WEBHOOK_RETRY_SCHEDULE=1,2,4,8,16,30,60,60,60,60 (11 attempts; the default's 5 s ... 10 h
  would make a failed attempt's retry minutes away), WEBHOOK_SWEEP_INTERVAL_SECONDS=1 (5),
  WEBHOOK_REDELIVER_AFTER_SECONDS=10 (60), WEBHOOK_BREAKER_COOLOFF_SECONDS=5 (300); the jitter
  (20%), the breaker's rate (20 attempts in 60 s, half failed) and the lease
  (WEBHOOK_LEASE_SECONDS, 10) are the defaults: what a killed worker held is taken again a
  lease after it stopped renewing (a retry it held: a lease after its due time).

Reported: events delivered (the delivery's state in the database, and a 2xx at the receiver
for the event's id), lost (neither), requests per event and repeats (an id answered 2xx more
than once), ids at the receiver that are no event's (0), signatures that did not verify (0);
events/s from the first event's creation to the last event's first 2xx; delivery latency
(event created -> its first 2xx at the receiver) p50/p95/max, all events and those that the
killed worker held; circuit breaker openings (worker logs). The 1-minute load average before
and after: the machine is shared.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PG = os.environ.get("OUTBOX_BENCH_PG", "postgres://postgres@127.0.0.1:5432")  # server, no database
DB = os.environ.get("OUTBOX_BENCH_DB", "casework_outbench")
BROKER = os.environ.get("OUTBOX_BENCH_BROKER", "redis://127.0.0.1:6379/15")
KILL_APP = "outbox_sweep_kill"  # bench/outbox_sweep_kill.py
CELERY = str(Path(sys.executable).parent / "celery")
BENCH_SETTINGS = {
    "WEBHOOK_RETRY_SCHEDULE": "1,2,4,8,16,30,60,60,60,60",
    "WEBHOOK_SWEEP_INTERVAL_SECONDS": "1",
    "WEBHOOK_REDELIVER_AFTER_SECONDS": "10",
    "WEBHOOK_BREAKER_COOLOFF_SECONDS": "5",
    "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
}
# Any of them set in the environment wins (e.g. WEBHOOK_REDELIVER_AFTER_SECONDS=60, the default).
BENCH_SETTINGS = {name: os.environ.get(name, value) for name, value in BENCH_SETTINGS.items()}
ENDPOINT_TIMEOUT = 5

log = logging.getLogger("bench")


# --- The receiver (a process of its own) ------------------------------------------------------

def receiver_main(args) -> None:
    """Serve on 127.0.0.1 (an OS-chosen port, printed), verify, answer from the seeded script,
    log each request as a JSON line. The secret comes on stdin once the endpoint exists."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from standardwebhooks import Webhook
    from standardwebhooks.webhooks import WebhookVerificationError

    lock = threading.Lock()
    rng = random.Random(args.seed)  # noqa: S311 - a reproducible failure script, not a secret
    out = open(args.receiver_log, "a", buffering=1)  # noqa: SIM115 - open for the server's life
    state: dict = {"webhook": None}
    latency = args.receiver_latency / 1000

    class Handler(BaseHTTPRequestHandler):
        def setup(self):
            super().setup()
            # One write for the answer would do too; without Nagle a two-part answer is not held back.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self):  # noqa: N802 - http.server's name
            arrived = time.time()
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                state["webhook"].verify(body, headers)
                verified = True
            except WebhookVerificationError:
                verified = False
            try:
                body_id = json.loads(body).get("id")
            except ValueError:
                body_id = None
            with lock:
                fail = rng.random() < args.fail_rate
                status = rng.choice((500, 502, 503)) if fail else 200
            if not verified:
                status = 401
            if latency:
                time.sleep(latency)  # the receiver's own work
            answer = b'{"ok":true}' if status == 200 else b"receiver says no"
            self.send_response(status)
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            with lock:
                out.write(json.dumps({"id": headers.get("webhook-id"), "body_id": body_id, "verified": verified,
                                      "status": status, "arrived": arrived, "answered": time.time()}) + "\n")

        def log_message(self, *a):
            pass

    ThreadingHTTPServer.request_queue_size = 1024
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_port, flush=True)
    state["webhook"] = Webhook(sys.stdin.readline().strip())
    server.serve_forever(poll_interval=0.05)


class Receiver:
    def __init__(self, args, log_path: Path):
        self.log_path = log_path
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--as-receiver", "--receiver-log", str(log_path), "--seed", str(args.seed),
             "--fail-rate", str(args.fail_rate), "--receiver-latency", str(args.receiver_latency)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
        self.port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}/hooks/casework"

    def give_secret(self, secret: str) -> None:
        self.proc.stdin.write(secret + "\n")
        self.proc.stdin.flush()

    def requests(self) -> list[dict]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=10)


# --- Database, broker, workers ----------------------------------------------------------------

def setup_django(var_dir: str) -> None:
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret", "FIELD_ENCRYPTION_KEYS": "YmVuY2gtb25seS1maWVsZC1rZXktbm90LWZvci1wcm8=", "VAR_DIR": var_dir,
        "DATABASE_URL": f"{PG}/{DB}", "CELERY_BROKER_URL": BROKER, "LLM_PROVIDER": "offline", "DEBUG": "false",
        **BENCH_SETTINGS,
    })
    for name in ("CELERY_TASK_ALWAYS_EAGER", "PROMETHEUS_MULTIPROC_DIR", "OTEL_EXPORTER_OTLP_ENDPOINT",
                 "AUDIT_SEQUENCER", "CONN_MAX_AGE", "LOG_LEVEL", "WORKER_METRICS_PORT"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(REPO))
    import django
    from django.conf import settings

    django.setup()
    settings.AUDIT_SEQUENCER = "inline"
    for name in ("celery", "casework", "audit", "agents"):
        logging.getLogger(name).setLevel(logging.WARNING)


def recreate_db() -> None:
    import psycopg
    from django.core.management import call_command
    from django.db import connections

    connections.close_all()
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB}"')
    call_command("migrate", verbosity=0)


def flush_broker() -> None:
    import redis

    redis.Redis.from_url(BROKER).flushdb()


class CeleryProcess:
    """`celery -A casework ...` in a session of its own, logging to a file."""

    def __init__(self, name: str, args: list[str], log_dir: str, *, app: str = "casework", env: dict | None = None):
        self.name = name
        self.log_path = Path(log_dir) / f"{name}-{time.time():.0f}.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen([CELERY, "-A", app, *args], cwd=REPO,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # dead already (the sweep-kill trap killed it)
            pass
        self.proc.wait(timeout=10)
        self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if not self._log.closed:
            self._log.close()

    def tail(self, lines: int = 15) -> str:
        return f"[{self.name}]\n" + "\n".join(self.log_text().splitlines()[-lines:])


def production_worker(n: int, threads: int, log_dir: str, *, kill_file: str = "") -> CeleryProcess:
    """README.md's worker command, one per core; with `kill_file`, under the sweep-kill trap."""
    extra = {"OUTBOX_BENCH_KILL_FILE": kill_file,
             "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    return CeleryProcess(f"worker{n}", ["worker", "--pool=threads", f"--concurrency={threads}",
                                        f"--hostname=casework{n}@%h", "--without-gossip", "--without-mingle",
                                        "--loglevel=INFO"], log_dir,
                         **({"app": KILL_APP, "env": extra} if kill_file else {}))


def wait_ready(procs: list[CeleryProcess], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    for p in procs:
        while " ready." not in p.log_text():
            if p.proc.poll() is not None:
                raise RuntimeError(f"{p.name} exited:\n{p.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{p.name} not ready:\n{p.tail()}")
            time.sleep(0.1)


def load() -> float:
    return os.getloadavg()[0]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


# --- The trial --------------------------------------------------------------------------------

def run(args, var_dir: str) -> dict:
    from casework.cases.services import case_create
    from casework.outbox.models import Delivery, OutboxEvent
    from casework.outbox.services import endpoint_create

    recreate_db()
    flush_broker()
    log_dir = tempfile.mkdtemp(prefix="logs-", dir=var_dir)
    receiver = Receiver(args, Path(var_dir) / "receiver.jsonl")
    endpoint, secret = endpoint_create(actor="system", url=receiver.url, description="bench receiver",
                                       event_types=["case.created"], timeout_seconds=ENDPOINT_TIMEOUT)
    receiver.give_secret(secret)

    Path(var_dir, "celerybeat-schedule").unlink(missing_ok=True)
    kill_file = str(Path(var_dir) / "kill-in-sweep") if args.kill == "sweep" else ""
    workers = {n: production_worker(n, args.threads, log_dir, kill_file=kill_file if n == 1 else "")
               for n in (1, 2)}
    beat = CeleryProcess("beat", ["beat", "--loglevel=INFO"], log_dir)
    retired: list[CeleryProcess] = []
    wait_ready(list(workers.values()))
    load_before = load()
    log.info("workers ready; load %.2f; creating %d events", load_before, args.events)

    kill: dict = {}
    stop_watch = threading.Event()

    def first_ok_ids() -> set[str]:
        return {r["id"] for r in receiver.requests() if 200 <= r["status"] < 300}

    def watch_and_kill():
        """When half the events have had their 2xx: SIGKILL worker 1 (midway), or arm its trap
        and wait for it to die inside a sweep (sweep); then start it again."""
        while not stop_watch.is_set():
            done = len(first_ok_ids())
            if done >= args.events // 2:
                in_flight = Delivery.objects.filter(state=Delivery.State.DELIVERING).count()
                kill.update({"in_progress": True, "delivered_before": done, "delivering_at_kill": in_flight})
                if args.kill == "sweep":
                    Path(kill_file).touch()
                    deadline = time.monotonic() + 60
                    while workers[1].proc.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.01)
                    where = Path(kill_file + ".where")
                    if where.exists():
                        at, kill["where"] = where.read_text().split(" ", 1)
                        at = float(at)
                        kill["where"] = kill["where"].strip()
                    else:
                        at, kill["where"] = time.time(), "by the bench: no sweep ran on worker 1 within 60 s"
                    workers[1].kill()
                    Path(kill_file).unlink()
                else:
                    at = time.time()
                    workers[1].kill()
                    kill["where"] = "by the bench, wherever it was"
                kill["at"] = at
                log.info("killed worker 1 (%s) at %d/%d delivered (%d deliveries being sent by either worker)",
                         kill["where"], done, args.events, in_flight)
                retired.append(workers[1])
                workers[1] = production_worker(1, args.threads, log_dir)
                wait_ready([workers[1]])
                kill["restarted_after_s"] = time.time() - at
                kill["in_progress"] = False
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch_and_kill, daemon=True)
    if args.kill != "none":
        watcher.start()
    started = time.time()
    for i in range(args.events):
        if args.rate:
            time.sleep(max(0.0, started + i / args.rate - time.time()))
        case_create(actor="system", case_type="fraud_alert", title=f"Bench case {i}")
    created_s = time.time() - started
    log.info("created %d events in %.1f s", args.events, created_s)

    deadline = time.monotonic() + args.timeout
    while True:
        delivered = Delivery.objects.filter(state=Delivery.State.DELIVERED).count()
        ok_ids = first_ok_ids()
        if delivered >= args.events and len(ok_ids) >= args.events:
            break
        for p in [*workers.values(), beat]:
            if p.proc.poll() is not None and not kill.get("in_progress"):
                raise RuntimeError(f"{p.name} exited:\n{p.tail()}")
        if time.monotonic() > deadline:
            log.error("timed out: %d delivered in the database, %d ids with a 2xx", delivered, len(ok_ids))
            break
        time.sleep(0.5)
    stop_watch.set()
    if watcher.is_alive():
        watcher.join(timeout=130)
    time.sleep(2)  # let the receiver's log settle (answers still being written)
    load_after = load()
    for p in [*workers.values(), beat]:
        p.stop()
    logs = "".join(p.log_text() for p in [*workers.values(), beat, *retired])
    receiver.stop()
    return figures(args, receiver.requests(), OutboxEvent, Delivery, kill, logs,
                   created_s=created_s, load_before=load_before, load_after=load_after)


def figures(args, requests: list[dict], OutboxEvent, Delivery, kill: dict, logs: str, *,  # noqa: N803
            created_s: float, load_before: float, load_after: float) -> dict:
    from casework.outbox.models import DeliveryAttempt

    events = {e: c.timestamp() for e, c in OutboxEvent.objects.values_list("id", "created_at")}
    states = Counter(Delivery.objects.values_list("state", flat=True))
    by_id: dict[str, list[dict]] = defaultdict(list)
    for r in sorted(requests, key=lambda r: r["answered"]):
        by_id[r["id"]].append(r)
    first_ok = {i: next((r["answered"] for r in rs if r["status"] == 200), None) for i, rs in by_id.items()}
    delivered_ids = {i for i, t in first_ok.items() if t is not None}
    db_delivered = set(Delivery.objects.filter(state=Delivery.State.DELIVERED).values_list("event_id", flat=True))
    lost = set(events) - (delivered_ids & db_delivered)
    latencies = {i: first_ok[i] - events[i] for i in delivered_ids if i in events}
    # A claim (attempts counts claims) with no attempt recorded: the killed worker took it and
    # died before recording the answer, whether its request had left (the receiver logged it)
    # or not yet.
    recorded = Counter(DeliveryAttempt.objects.values_list("delivery__event_id", flat=True))
    claims = dict(Delivery.objects.values_list("event_id", "attempts"))
    held = {i for i, n in claims.items() if n > recorded.get(i, 0)}
    unrecorded_requests = sum(max(0, len(by_id[i]) - recorded.get(i, 0)) for i in by_id)
    resent_after = sorted(round(min((r["arrived"] for r in by_id[i] if r["arrived"] > kill["at"]), default=0)
                                - kill["at"], 1) for i in held) if kill else []
    ok_twice = sum(1 for rs in by_id.values() if sum(r["status"] == 200 for r in rs) > 1)
    recorded_attempts = DeliveryAttempt.objects.count()
    start = min(events.values())
    end = max(first_ok[i] for i in delivered_ids) if delivered_ids else start
    lat = sorted(latencies.values())
    ok_times = sorted(first_ok[i] for i in delivered_ids)
    t95 = ok_times[max(0, round(0.95 * len(events)) - 1)] - start if len(ok_times) >= 0.95 * len(events) else None
    return {
        "events": len(events), "delivered_db": len(db_delivered), "delivered_receiver": len(delivered_ids),
        "states": dict(states), "lost": len(lost),
        "requests": len(requests), "answered_2xx": sum(r["status"] == 200 for r in requests),
        "answered_5xx": sum(r["status"] >= 500 for r in requests),
        "not_verified": sum(not r["verified"] for r in requests),
        "foreign_ids": len(set(by_id) - set(events)),
        "body_id_mismatch": sum(r["id"] != r["body_id"] for r in requests),
        "ids_with_repeats": sum(1 for rs in by_id.values() if len(rs) > 1),
        "ok_more_than_once": ok_twice,
        "max_requests_per_id": max((len(rs) for rs in by_id.values()), default=0),
        "recorded_attempts": recorded_attempts,
        "created_s": created_s, "creation_per_s": len(events) / created_s,
        "wall_s": end - start, "events_per_s": len(delivered_ids) / (end - start) if end > start else 0,
        "t95_s": t95, "events_per_s_95": round(0.95 * len(events)) / t95 if t95 else None,
        "p50_ms": 1000 * statistics.median(lat) if lat else None,
        "p95_ms": 1000 * percentile(lat, 0.95) if lat else None,
        "max_ms": 1000 * lat[-1] if lat else None,
        "first_try_p50_ms": 1000 * statistics.median([latencies[i] for i in latencies if len(by_id[i]) == 1] or [0]),
        "held_by_killed": len(held),
        "held_claims": sum(claims[i] - recorded.get(i, 0) for i in held),
        "held_requests_unrecorded": unrecorded_requests,
        "held_latency_ms": sorted(round(1000 * latencies[i]) for i in held if i in latencies),
        "held_resent_after_kill_s": resent_after,
        "kill": kill,
        "breaker_opened": logs.count("circuit breaker open until"),
        "probes_failed": logs.count("failed its probe"),
        "probes_ok": logs.count("answered the probe"),
        "closed_by_earlier_request": logs.count("answered a request sent before its breaker opened"),
        "load_before": load_before, "load_after": load_after,
        "settings": BENCH_SETTINGS | {"endpoint timeout_seconds": ENDPOINT_TIMEOUT},
        "args": {"kill": args.kill, "events": args.events, "fail_rate": args.fail_rate, "seed": args.seed,
                 "rate": args.rate,
                 "receiver_latency_ms": args.receiver_latency, "threads": args.threads},
    }


def machine() -> dict:
    import celery
    import django
    import psycopg
    import redis

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown")
    with psycopg.connect(f"{PG}/postgres") as conn:
        pg = conn.execute("SHOW server_version").fetchone()[0]
    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(), "postgresql": pg.split()[0],
            "redis": redis.Redis.from_url(BROKER).info("server")["redis_version"], "django": django.get_version(),
            "celery": celery.__version__,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}


def report(r: dict, m: dict) -> str:
    a = r["args"]
    k = r["kill"]
    held = r["held_latency_ms"]
    lines = [
        f"Machine: {m['nproc']} CPUs ({m['cpu']}), Python {m['python']}, PostgreSQL {m['postgresql']}, "
        f"Redis {m['redis']}, Django {m['django']}, Celery {m['celery']}; run {m['date']}. "
        f"Load average (1 min) {r['load_before']:.2f} before, {r['load_after']:.2f} after.",
        "",
        f"{r['events']} `case.created` events, one endpoint; receiver failing {a['fail_rate']:.0%} of attempts "
        f"(seed {a['seed']}) and answering after {a['receiver_latency_ms']} ms; two workers "
        f"`--pool=threads --concurrency={a['threads']}` and beat; " + (
            "no worker killed." if a["kill"] == "none" else
            f"worker 1 killed (SIGKILL, {k.get('where', '?')}) at {k.get('delivered_before', '?')} events "
            f"delivered and started again ({k.get('restarted_after_s', 0):.1f} s until ready)."),
        "",
        "| measurement | figure |",
        "|---|---|",
        f"| delivered (database: state delivered / receiver: a 2xx for the id) | {r['delivered_db']} / "
        f"{r['delivered_receiver']} of {r['events']} |",
        f"| lost | {r['lost']} |",
        f"| requests at the receiver (2xx / 5xx) | {r['requests']} ({r['answered_2xx']} / {r['answered_5xx']}) |",
        f"| ids sent more than once / answered 2xx more than once | {r['ids_with_repeats']} / "
        f"{r['ok_more_than_once']} |",
        f"| requests under an id that is no event's, or whose body's id differs | "
        f"{r['foreign_ids']}, {r['body_id_mismatch']} |",
        f"| signatures that did not verify | {r['not_verified']} |",
        f"| most requests for one id | {r['max_requests_per_id']} |",
        f"| attempts recorded in the delivery log | {r['recorded_attempts']} |",
        f"| events created (one thread) | {r['created_s']:.1f} s, {r['creation_per_s']:.0f}/s |",
        f"| **events/s** (first created -> last first 2xx) | **{r['events_per_s']:.1f}** ({r['wall_s']:.1f} s) |",
        f"| events/s until 95% had their first 2xx (without the tail of retries and the lease) | "
        f"{r['events_per_s_95']:.1f} ({r['t95_s']:.1f} s) |",
        f"| **delivery latency p50 / p95** (created -> first 2xx) | **{r['p50_ms']:.0f} ms / {r['p95_ms']:.0f} ms**"
        f" (max {r['max_ms']:.0f} ms) |",
        f"| latency p50 of events delivered at the first attempt | {r['first_try_p50_ms']:.0f} ms |",
        f"| claims the killed worker held (taken, answer never recorded) / of them, requests the receiver "
        f"had logged | {r['held_claims']} / {r['held_requests_unrecorded']} |",
        f"| those {r['held_by_killed']} events: latency (created -> first 2xx) | "
        f"{', '.join(f'{v / 1000:.1f} s' for v in held) or '-'} |",
        f"| those events: sent again after the kill (the lease is 10 s) | "
        f"{', '.join(f'{v} s' for v in r['held_resent_after_kill_s']) or '-'} |",
        f"| circuit breaker: opened; probes failed (open again) / succeeded (closed); closed by a 2xx to a "
        f"request sent before it opened | {r['breaker_opened']}; {r['probes_failed']} / {r['probes_ok']}; "
        f"{r['closed_by_earlier_request']} |",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kill", choices=("sweep", "midway", "none"), default="sweep",
                        help="kill worker 1 inside a sweep (default), wherever it is, or not at all")
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--fail-rate", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--rate", type=float, default=0, help="events created per second (0: as fast as it can)")
    parser.add_argument("--receiver-latency", type=float, default=20, help="ms the receiver takes to answer")
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--json")
    parser.add_argument("--write-readme", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the temporary VAR_DIR (logs)")
    parser.add_argument("--as-receiver", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--receiver-log", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.as_receiver:
        receiver_main(args)
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    var_dir = tempfile.mkdtemp(prefix="outbox-bench-")
    try:
        setup_django(var_dir)
        results = run(args, var_dir)
        text = report(results, machine())
        print(text)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        if args.write_readme:
            sys.path.insert(0, str(Path(__file__).parent))
            from readme_block import write_block

            write_block(f"outbox_delivery_{args.kill}", text)
    finally:
        if args.keep:
            print(f"logs under {var_dir}")
        else:
            shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
