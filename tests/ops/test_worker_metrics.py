"""A worker's own metrics endpoint (WORKER_METRICS_PORT), for workers on machines of their own."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection, transaction
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from casework.ops.worker_metrics import worker_metrics_serve, worker_metrics_start

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "worker-metrics-test-token"
# A failure guard only: the worker starts in about 3 s and the investigation takes about 1 s.
DEADLINE_SECONDS = 60
# No proxy from the environment for 127.0.0.1.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _scrape(port: int, token: str | None = TOKEN) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
    try:
        with _opener.open(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _planner_decisions(text: str) -> float:
    return sum(sample.value for family in text_string_to_metric_families(text)
               if family.name == "ops_agent_planner_decisions"
               for sample in family.samples if sample.name == "ops_agent_planner_decisions_total")


def _test_database_url() -> str:
    """pytest-django's test database (not DATABASE_URL's), for the worker to use."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    user = quote(db["USER"] or "") + (f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else "")
    host = quote(db["HOST"] or "localhost", safe="")
    return f"postgres://{user}@{host}:{db['PORT'] or 5432}/{quote(db['NAME'])}"


class Worker:
    """`celery -A casework worker` as the README's production section starts one, with this
    test's database; this process sends it work through the broker both are configured with
    (the filesystem broker under the tests' VAR_DIR, or CI's Redis)."""

    def __init__(self, log_path: Path, *, pool: str = "threads", **env: str):
        self.port = _free_port()
        self.log_path = log_path
        base = {k: v for k, v in os.environ.items()
                if k not in ("CELERY_TASK_ALWAYS_EAGER", "PROMETHEUS_MULTIPROC_DIR", "WORKER_METRICS_ADDR")}
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "celery"), "-A", "casework", "worker", f"--pool={pool}",
             "--concurrency=4" if pool == "threads" else "--concurrency=1",
             f"--hostname=metrics-test-{os.getpid()}@%h", "--without-gossip", "--without-mingle", "--loglevel=INFO"],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**base, "DATABASE_URL": _test_database_url(), "VAR_DIR": str(Path(settings.VAR_DIR).resolve()),
                 "WORKER_METRICS_PORT": str(self.port), "METRICS_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1", **env},
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def wait_until_serving(self) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while True:
            try:
                _scrape(self.port)
                return
            except OSError:  # connection refused: not listening yet
                pass
            assert self.proc.poll() is None, f"The worker exited ({self.proc.returncode}):\n{self.log()}"
            assert time.monotonic() < deadline, f"No metrics endpoint on port {self.port}:\n{self.log()}"
            time.sleep(0.1)

    def stop(self) -> None:
        """Kill the worker and its children (its own process group): the test is over and
        nothing is in flight, and a warm or cold shutdown takes 4 to 5 s to notice."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._log.close()


@pytest.fixture
def start_worker(transactional_db, tmp_path, monkeypatch):
    """Start a real worker; stopped before the test's database is flushed (its connections
    would hold it up on PostgreSQL)."""
    from casework.celery import app

    # pytest-env makes Celery eager; here the run goes through the broker to the worker.
    monkeypatch.setitem(app.conf, "task_always_eager", False)
    # A message an earlier test of this process left in its broker (a run it queued and nobody
    # took) would be this worker's too, and its counts this test's: the queues start empty.
    app.control.purge()
    workers: list[Worker] = []

    def start(**kwargs) -> Worker:
        worker = Worker(tmp_path / f"worker-{len(workers)}.log", **kwargs)
        workers.append(worker)
        worker.wait_until_serving()
        return worker

    yield start
    for worker in workers:
        worker.stop()


def wait_for(condition, workers, what: str, deadline_seconds: float = DEADLINE_SECONDS):
    """Poll `condition` until it gives something true, and return it. A real worker's effect
    takes as long as the machine makes it: the deadline only ends a test that would otherwise
    hang (a failure guard, no claim about speed), and a worker that exited fails at once."""
    deadline = time.monotonic() + deadline_seconds
    while not (value := condition()):
        for worker in workers:
            assert worker.proc.poll() is None, f"The worker exited ({worker.proc.returncode}):\n{worker.log()}"
        assert time.monotonic() < deadline, f"{what}:\n" + "\n".join(w.log() for w in workers)
        time.sleep(0.05)
    return value


def _investigate_and_wait(worker: Worker):
    """Start a transaction investigation (seed 003, offline planner) and wait for its run to end."""
    from agents.models import AgentRun
    from casework.transactions.demo_data import card_history, planted
    from casework.transactions.ingest import transactions_import
    from casework.transactions.services import investigation_start

    history = card_history("CARD-7301", days=20)
    rows = planted("card_testing", "CARD-7301", history)
    transactions_import(actor="system", rows=history + rows, via="test")
    with transaction.atomic():  # the run's message is sent on commit
        investigation = investigation_start(actor="system", transaction_id=rows[-1]["transaction_id"])
    run = wait_for(lambda: (r := AgentRun.objects.get(case=investigation.case)).status not in AgentRun.ACTIVE and r,
                   [worker], "The investigation's run did not end")
    assert run.status == AgentRun.Status.COMPLETED, (run.status, run.error, worker.log())
    return investigation


def test_a_worker_started_as_the_readme_says_serves_its_planner_decisions(start_worker):
    worker = start_worker()
    # METRICS_TOKEN guards it as it guards the web's /metrics.
    status, body = _scrape(worker.port, token=None)
    assert status == 401
    assert "bearer token" in body
    assert _scrape(worker.port, token="not-the-token")[0] == 401

    status, text = _scrape(worker.port)
    assert status == 200
    assert "# TYPE ops_agent_planner_decisions_total counter" in text
    assert _planner_decisions(text) == 0
    # The web's /metrics has the database's counts; a worker does not repeat them.
    assert "casework_cases" not in text

    investigation = _investigate_and_wait(worker)

    # The task's own counter is counted by Celery's task_success signal, which fires once the task
    # function has returned: after the run's row said "completed". Scraped until it is there (the
    # deadline is a failure guard, not a claim about speed).
    success = 'casework_celery_tasks_total{outcome="success",task="agents.tasks.run_pipeline"} 1.0'
    wait_for(lambda: success in _scrape(worker.port)[1], [worker], "No task counted")
    status, text = _scrape(worker.port)
    assert status == 200
    decisions = investigation.planner_decisions.count()
    assert decisions >= 4
    assert _planner_decisions(text) == decisions
    assert 'ops_agent_planner_decisions_total{selected_tool="context_tool",used_fallback="false"} 1.0' in text
    assert success in text  # once, not more


def test_a_prefork_worker_serves_its_childrens_samples_through_the_multiprocess_directory(start_worker, tmp_path):
    multiproc_dir = tmp_path / "prometheus"
    multiproc_dir.mkdir()
    worker = start_worker(pool="prefork", PROMETHEUS_MULTIPROC_DIR=str(multiproc_dir))

    investigation = _investigate_and_wait(worker)

    status, text = _scrape(worker.port)
    assert status == 200
    assert _planner_decisions(text) == investigation.planner_decisions.count() > 0


# --- in this process ---------------------------------------------------------------------

def test_a_port_in_use_is_an_error_in_the_log_and_the_worker_goes_on(caplog):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with caplog.at_level(logging.ERROR, logger="casework.ops.worker_metrics"):
            server = worker_metrics_serve(registry=CollectorRegistry(), port=port, addr="127.0.0.1", token="")
    assert server is None
    assert f"cannot listen on 127.0.0.1 port {port}" in caplog.text
    assert "Address already in use" in caplog.text


def test_the_endpoint_serves_its_registry_behind_the_token():
    registry = CollectorRegistry()
    Counter("casework_test_things", "Things.", registry=registry).inc(3)
    port = _free_port()
    server = worker_metrics_serve(registry=registry, port=port, addr="127.0.0.1", token=TOKEN)
    try:
        assert _scrape(port, token=None)[0] == 401
        status, text = _scrape(port)
        assert status == 200
        assert "casework_test_things_total 3.0" in text
    finally:
        server.shutdown()
        server.server_close()


def test_a_prefork_worker_without_a_multiprocess_directory_serves_nothing(settings, monkeypatch, caplog):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    settings.WORKER_METRICS_PORT = _free_port()
    with caplog.at_level(logging.ERROR, logger="casework.ops.worker_metrics"):
        assert worker_metrics_start(prefork=True) is None
    assert "--pool=prefork needs PROMETHEUS_MULTIPROC_DIR" in caplog.text


@pytest.mark.parametrize("value", ["abc", "0", "70000"])
def test_a_bad_worker_metrics_port_stops_start_up(value, tmp_path):
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "DATABASE_URL", "SECRET_KEY",
                                                "FIELD_ENCRYPTION_KEYS") if k in os.environ}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, env={**base, "VAR_DIR": str(tmp_path), "WORKER_METRICS_PORT": value})
    assert result.returncode != 0
    assert "ImproperlyConfigured: WORKER_METRICS_PORT is a port number (1 to 65535) or empty" in result.stderr
