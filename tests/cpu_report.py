"""Where the suite's CPU goes, per test (issue 44): `make test PYTEST_ARGS="-p tests.cpu_report"`.

Wall time per test (`--durations`) says little on a 2-core machine that runs several workers:
a test waiting on a browser, a live server or a subprocess takes long without costing anything,
and a test beside a heavy one takes long because of it. This plugin counts, per test, the CPU
seconds (user + system) of:
- the worker process itself, its threads included (live servers, real workers run as threads);
- every process below it, alive (Chromium, the Playwright driver, a Celery worker, SMTP or
  OIDC fakes) or ended and reaped during the test;
- the PostgreSQL backends serving this worker's test database (read from /proc by their
  command line; a backend that ended during the test is missed).

Each worker writes `cpu-<worker>.json` under var/test; the run's end prints the 40 tests that
cost the most CPU, and the total; `timeline-<worker>.json` beside it holds when each test started
and ended (`python -m tests.cpu_report` prints each worker's last minutes from it). Linux only (/proc); off unless loaded with `-p`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

TICK = os.sysconf("SC_CLK_TCK")
OUT = Path(os.environ.get("CPU_REPORT_DIR", "var/test/cpu"))
_results: dict[str, dict[str, float]] = {}
_timeline: dict[str, tuple[str, float, float]] = {}


def _processes() -> dict[int, tuple[int, float, str]]:
    """pid -> (parent pid, CPU seconds of the process, its command line)."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry.name}/cmdline", "rb") as cmd:
                cmdline = cmd.read(300).replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        table[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, cmdline)
    return table


def _sample() -> dict[str, float]:
    from django.db import connection

    me = os.getpid()
    table = _processes()
    below, parents = {me}, {}
    for pid, (ppid, _, _) in table.items():
        parents.setdefault(ppid, []).append(pid)
    todo = [me]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in below:
                below.add(child)
                todo.append(child)
    reaped = os.times()
    database = connection.settings_dict.get("NAME") or ""
    return {
        "self": table.get(me, (0, 0.0, ""))[1],
        "below": sum(table[pid][1] for pid in below if pid != me) + reaped.children_user + reaped.children_system,
        "postgres": sum(cpu for _, cpu, cmd in table.values()
                        if cmd.startswith("postgres: ") and f" {database} " in cmd) if database else 0.0,
    }


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist): a new report
        for path in [*OUT.glob("cpu-*.json"), *OUT.glob("timeline-*.json")]:
            path.unlink()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before, start = _sample(), time.time()
    yield
    after = _sample()
    _results[item.nodeid] = {key: round(max(0.0, after[key] - before[key]), 2) for key in before}
    # When it ran, for the run's timeline (which worker was busy with what at the end):
    # kept beside the CPU figures in the JSON, not summed with them.
    _timeline[item.nodeid] = (os.environ.get("PYTEST_XDIST_WORKER", "main"), round(start, 2), round(time.time(), 2))


def pytest_sessionfinish(session):
    if not _results:
        return
    OUT.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (OUT / f"cpu-{worker}.json").write_text(json.dumps(_results))
    (OUT / f"timeline-{worker}.json").write_text(json.dumps(_timeline))


def pytest_terminal_summary(terminalreporter):
    merged = {}
    for path in OUT.glob("cpu-*.json"):
        merged.update(json.loads(path.read_text()))
    if not merged:
        return
    total = {key: sum(row[key] for row in merged.values()) for key in ("self", "below", "postgres")}
    terminalreporter.write_sep("=", f"CPU per test (s): {len(merged)} tests, worker {total['self']:.0f}, "
                                    f"processes below {total['below']:.0f}, PostgreSQL {total['postgres']:.0f}")
    for nodeid, row in sorted(merged.items(), key=lambda kv: -sum(kv[1].values()))[:40]:
        terminalreporter.write_line(f"{sum(row.values()):7.1f}  self {row['self']:6.1f}  below {row['below']:6.1f}  "
                                    f"pg {row['postgres']:5.1f}  {nodeid}")


def _tail(seconds: float = 150.0) -> None:
    """What each worker ran in the run's last `seconds`, and when each went idle."""
    rows = []
    for path in OUT.glob("timeline-*.json"):
        rows += [(worker, start, end, nodeid) for nodeid, (worker, start, end) in json.loads(path.read_text()).items()]
    if not rows:
        return
    first, last = min(r[1] for r in rows), max(r[2] for r in rows)
    print(f"run: {last - first:.0f} s from the first test's start to the last one's end")
    for worker in sorted({r[0] for r in rows}):
        mine = sorted(r for r in rows if r[0] == worker)
        busy = sum(r[2] - r[1] for r in mine)
        print(f"{worker}: {len(mine)} tests, busy {busy:.0f} s, idle from {mine[-1][2] - first:.0f} s")
        for _, start, end, nodeid in mine:
            if end > last - seconds and end - start > 2:
                print(f"    {start - first:6.0f} .. {end - first:6.0f}  {nodeid}")


if __name__ == "__main__":
    _tail()
