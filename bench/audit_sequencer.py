"""Audit trail write throughput (issue 8): pending entries plus a sequencer, against the old
global chain lock. Run by hand:

    .venv/bin/python bench/audit_sequencer.py [--database-url URL] [--writers 8] [--seconds 10]
        [--designs background,inline,old] [--write-readme]

Needs PostgreSQL (default postgres://postgres@127.0.0.1:5432/casework_audit_bench). The
database named in the URL is dropped, re-created and migrated with Django's `migrate`; its
name must contain "bench". It is dropped again at the end unless --keep.

Each trial runs N writer threads for --seconds. A writer loops over short transactions, each
inserting one tiny business row and one audit entry, as a service does. Designs:
- background: `audit_record` inserts the entry pending; the commit wakes the process's
  sequencer thread (AUDIT_SEQUENCER=background), which links entries in batches.
- inline: the same writes; each committing thread runs `audit_sequence` itself after commit.
- old: the design before issue 8, rebuilt on the new table: each writer takes the chain lock
  (pg_advisory_xact_lock), reads the head's hash and inserts its entry hashed, holding the
  lock until its commit.
Reported: entries/s committed by the writers, the writers' transaction time, the sequencer's
lag (commit to linked, seen by a thread polling every --poll-ms), how long the last pending
entries took to be linked after the writers stopped, and the chain check over every entry.

--write-readme replaces the figures between the audit_sequencer markers in bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from readme_block import README, write_block  # bench/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parents[1]
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/casework_audit_bench"
OLD_DESIGN_FIGURE = 45  # audit writes/s of the global-lock design, bench/README.md fraud_pipeline (b)

log = logging.getLogger("bench")


# --- The database (outside Django) -----------------------------------------------------------


def split_url(url: str) -> tuple[str, str]:
    """(maintenance URL on the same server, database name)."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if "bench" not in name:
        raise SystemExit(f"Refusing to drop and re-create {name!r}: the benchmark's database name must contain 'bench'.")
    return urlunsplit(parts._replace(path="/postgres")), name


def pg_admin(url: str, *statements: str) -> None:
    import psycopg

    admin_url, _ = split_url(url)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for sql in statements:
            conn.execute(sql)


def pg_version(url: str) -> str:
    import psycopg

    with psycopg.connect(split_url(url)[0]) as conn:
        return conn.execute("SHOW server_version").fetchone()[0]


# --- Django ------------------------------------------------------------------------------------


def setup_django(url: str, var_dir: str) -> None:
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret", "FIELD_ENCRYPTION_KEYS": "YmVuY2gtb25seS1maWVsZC1rZXktbm90LWZvci1wcm8=", "VAR_DIR": var_dir,
        "DATABASE_URL": url, "LLM_PROVIDER": "offline", "DEBUG": "false", "AUDIT_SEQUENCER": "background",
    })
    os.environ.pop("CELERY_TASK_ALWAYS_EAGER", None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS bench_business (id bigserial PRIMARY KEY, writer int, n int)")
    connection.close()


def reset_tables() -> None:
    from django.db import connection

    # TRUNCATE is the one way to empty the audit table: its trigger refuses DELETE.
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE audit_auditentry, bench_business RESTART IDENTITY")


# --- Writers -----------------------------------------------------------------------------------


def write_new(writer: int, n: int) -> int:
    from django.db import connection, transaction

    from audit.services import audit_record

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO bench_business (writer, n) VALUES (%s, %s)", [writer, n])
        entry = audit_record(actor=f"agent:bench{writer}", action="bench.write", data={"writer": writer, "n": n})
    return entry.pk


def write_old(writer: int, n: int) -> int:
    """The pre-issue-8 protocol: lock the chain head, read its hash, insert hashed, commit."""
    from django.db import connection, transaction

    from audit.models import AuditEntry
    from audit.services import _CHAIN_LOCK_KEY, GENESIS_HASH, audit_entry_build

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO bench_business (writer, n) VALUES (%s, %s)", [writer, n])
            entry = audit_entry_build(actor=f"agent:bench{writer}", action="bench.write",
                                      data={"writer": writer, "n": n})
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CHAIN_LOCK_KEY])
        head = (AuditEntry.objects.filter(position__isnull=False).order_by("-position")
                .values_list("position", "hash").first())
        position, prev_hash = head or (0, GENESIS_HASH)
        entry.position, entry.prev_hash = position + 1, prev_hash
        entry.hash = entry.compute_hash()
        entry.save(force_insert=True)
    return entry.pk


class LagWatcher(threading.Thread):
    """Polls for newly linked entries and notes when each was first seen linked; samples how
    many sessions are waiting for the chain lock (pg_stat_activity), which does not depend on
    how busy the machine's CPUs are."""

    def __init__(self, poll_s: float):
        super().__init__(name="lag-watcher", daemon=True)
        self.poll_s = poll_s
        self.seen: dict[int, float] = {}
        self.peak_pending = 0
        self.lock_waits: list[tuple[float, int]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        from django.db import connection

        last = 0
        try:
            while not self.stop.is_set():
                with connection.cursor() as cursor:
                    cursor.execute("SELECT id, position FROM audit_auditentry WHERE position > %s ORDER BY position",
                                   [last])
                    rows = cursor.fetchall()
                    cursor.execute("SELECT count(*) FROM audit_auditentry WHERE position IS NULL")
                    self.peak_pending = max(self.peak_pending, cursor.fetchone()[0])
                    cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                   "AND wait_event_type = 'Lock' AND wait_event = 'advisory'")
                    waiting = cursor.fetchone()[0]
                now = time.perf_counter()
                self.lock_waits.append((now, waiting))
                for pk, position in rows:
                    self.seen[pk] = now
                    last = position
                self.stop.wait(self.poll_s)
        finally:
            connection.close()


def python_cpu_s() -> float:
    """CPU seconds of this process and of its finished children (the forked writers)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))] if ordered else float("nan")


def run_writers(design: str, writers: int, first_writer: int, seconds: float, barrier, out) -> None:
    """Run `writers` writer threads in this process; put (commits, durations, error) on `out`."""
    from django.db import connection

    write = write_old if design == "old" else write_new
    commits: list[tuple[int, float]] = []
    durations: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def run(w: int) -> None:
        mine: list[tuple[int, float]] = []
        took: list[float] = []
        try:
            write(w, -1)  # warm-up: connect outside the timed window
            barrier.wait()
            stop_at = time.perf_counter() + seconds
            n = 0
            while (t0 := time.perf_counter()) < stop_at:
                pk = write(w, n)
                t1 = time.perf_counter()
                mine.append((pk, t1))
                took.append(t1 - t0)
                n += 1
        except BaseException as exc:  # noqa: BLE001 - reported after the trial
            errors.append(repr(exc))
            barrier.abort()
        finally:
            connection.close()
            with lock:
                commits.extend(mine)
                durations.extend(took)

    threads = [threading.Thread(target=run, args=(first_writer + i,), name=f"writer-{first_writer + i}")
               for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if design != "old":
        from audit.services import _sequencer

        _sequencer.stop(30)  # this process's last entries linked, its connection closed
    out.put((commits, durations, errors[0] if errors else ""))


def _child(design, writers, first_writer, seconds, barrier, out, sequencer_mode) -> None:
    from django.conf import settings

    settings.AUDIT_SEQUENCER = sequencer_mode
    run_writers(design, writers, first_writer, seconds, barrier, out)


def trial(design: str, writers: int, processes: int, seconds: float, poll_s: float) -> dict:
    import multiprocessing
    import queue

    from django.conf import settings
    from django.db import connection, connections

    from audit.models import AuditEntry
    from audit.services import _sequencer, audit_pending_count, audit_verify_chain

    reset_tables()
    mode = {"background": "background", "inline": "inline", "old": "off"}[design]
    settings.AUDIT_SEQUENCER = mode
    watcher = LagWatcher(poll_s)
    shares = [writers // processes + (1 if i < writers % processes else 0) for i in range(processes)]
    load_before = os.getloadavg()[0]
    if processes == 1:
        barrier = threading.Barrier(writers + 1)
        out: queue.Queue = queue.Queue()
        workers = [threading.Thread(target=run_writers, args=(design, writers, 0, seconds, barrier, out))]
    else:
        # fork: the children inherit Django set up; each opens its own connections and, in
        # background mode, starts its own sequencer thread.
        connections.close_all()
        ctx = multiprocessing.get_context("fork")
        barrier = ctx.Barrier(writers + 1)
        out = ctx.Queue()
        workers = [ctx.Process(target=_child, args=(design, share, sum(shares[:i]), seconds, barrier, out, mode))
                   for i, share in enumerate(shares)]
    for w in workers:
        w.start()
    watcher.start()
    py_cpu = python_cpu_s()
    barrier.wait()
    started = time.perf_counter()
    parts = [out.get(timeout=seconds + 300) for _ in workers]
    for w in workers:
        w.join()
    stopped = time.perf_counter()
    py_cpu = python_cpu_s() - py_cpu
    load_after = os.getloadavg()[0]
    if failed := [err for _, _, err in parts if err]:
        raise RuntimeError(f"A writer failed: {failed[0]}")
    commits = [c for cs, _, _ in parts for c in cs]
    durations = [d for _, ds, _ in parts for d in ds]

    drain_s = 0.0
    if design != "old":
        deadline = stopped + 120
        while audit_pending_count() and time.perf_counter() < deadline:
            time.sleep(0.005)
        drain_s = time.perf_counter() - stopped
        time.sleep(poll_s * 2)
    watcher.stop.set()
    watcher.join()
    _sequencer.flush(10)
    verify_started = time.perf_counter()
    check = audit_verify_chain()
    verify_s = time.perf_counter() - verify_started
    total = AuditEntry.objects.count()
    connection.close()

    lags = [watcher.seen[pk] - at for pk, at in commits if pk in watcher.seen] if design != "old" else []
    waits = [n for at, n in watcher.lock_waits if started <= at <= stopped]
    elapsed = max(stopped - started, seconds)
    return {
        "design": design, "writers": writers, "processes": processes, "seconds": elapsed,
        "entries": len(commits), "per_s": len(commits) / seconds,
        "txn_p50_ms": percentile(durations, 0.5) * 1000, "txn_p95_ms": percentile(durations, 0.95) * 1000,
        "lag_p50_ms": percentile(lags, 0.5) * 1000 if lags and design == "background" else None,
        "lag_p95_ms": percentile(lags, 0.95) * 1000 if lags and design == "background" else None,
        "lag_max_ms": max(lags) * 1000 if lags and design == "background" else None,
        "peak_pending": watcher.peak_pending if design != "old" else 0, "drain_s": drain_s,
        "lock_waiters": sum(waits) / len(waits) if waits else 0.0,
        "chain_checked": check.checked, "chain_total": total, "chain_pending": check.pending,
        "chain_ok": check.broken is None and check.checked == total, "chain_why": check.why, "verify_s": verify_s,
        "load": max(load_before, load_after),
        "py_cpu_ms": py_cpu * 1000 / max(len(commits), 1),
    }


# --- Report ----------------------------------------------------------------------------------


def machine(url: str) -> str:
    import django

    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return (f"Machine: {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, "
            f"PostgreSQL {pg_version(url)}, Django {django.get_version()}; "
            f"run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC.")


DESIGN_NAMES = {
    "background": "pending + background sequencer (default)",
    "inline": "pending + sequencer on the committing thread",
    "old": "old: chain lock in every writer",
}


def fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"


def report(results: list[dict], header: str, args: argparse.Namespace) -> str:
    lines = [
        header,
        f"Each writer thread loops over transactions of one business-row INSERT and one audit entry, "
        f"for {args.seconds:g} s; the threads are shared out among the given number of Python processes. "
        f"Each row is the median of {args.repeats} trials by entries/s (in brackets the lowest and highest); "
        f"the repeats went round all the rows in turn. Lag: commit to linked, seen by a thread polling every {args.poll_ms:g} ms. Drain: from the writers' stop until nothing was pending. "
        f"Sessions waiting for the chain lock: the mean number of this database's sessions waiting on the "
        f"advisory lock in pg_stat_activity, sampled at each poll while the writers ran. "
        f"Python CPU per entry: the CPU time of the benchmark's processes (writers, sequencer, lag watcher) "
        f"during the trial over the entries written. Load: 1-minute load average.",
        "",
        "| design | writers (processes) | entries/s | entries | writer txn p50 / p95 "
        "| sessions waiting for the chain lock | sequencer lag p50 / p95 / max | peak pending | drain "
        "| Python CPU per entry "
        "| audit chain | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lag = {
            "old": "none: linked by the writer, under the lock",
            "inline": "none: the writer links after its commit",
        }.get(r["design"]) or f"{fmt_ms(r['lag_p50_ms'])} / {fmt_ms(r['lag_p95_ms'])} / {fmt_ms(r['lag_max_ms'])}"
        chain = (f"intact ({r['chain_checked']:,} entries, checked in {r['verify_s']:.1f} s)"
                 + ("" if r["repeats"] == 1 else f"; all {r['repeats']} trials intact")
                 if r["chain_ok"] and r["all_ok"]
                 else f"BROKEN or incomplete: {r['chain_checked']}/{r['chain_total']} {r['chain_why']}")
        drain = f"{r['drain_s'] * 1000:.0f} ms" if r["design"] != "old" else "-"
        lines.append(
            f"| {DESIGN_NAMES[r['design']]} | {r['writers']} ({r['processes']}) | **{r['per_s']:,.0f}** ({r['range'][0]:,.0f} to {r['range'][1]:,.0f}) | {r['entries']:,} "
            f"| {fmt_ms(r['txn_p50_ms'])} / {fmt_ms(r['txn_p95_ms'])} | {r['lock_waiters']:.1f} | {lag} | {r['peak_pending']:,} | {drain} "
            f"| {r['py_cpu_ms']:.2f} ms | {chain} | {r['load']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_URL,
                        help=f"PostgreSQL database to drop, re-create and use; its name must contain 'bench' ({DEFAULT_URL}).")
    parser.add_argument("--writers", default="8", help="writer threads, or a comma-separated list of counts (8).")
    parser.add_argument("--processes", default="1",
                        help="processes the writer threads are shared out among, or a comma-separated list (1).")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each trial writes (10).")
    parser.add_argument("--designs", default="background,inline,old",
                        help="comma-separated: background, inline, old (all three).")
    parser.add_argument("--repeats", type=int, default=3,
                        help="trials per configuration, taken in turn; the table shows the median (3).")
    parser.add_argument("--poll-ms", type=float, default=20.0, help="the lag watcher's polling interval (20).")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards.")
    parser.add_argument("--write-readme", action="store_true", help="replace the figures in bench/README.md.")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    writer_counts = [int(w) for w in str(args.writers).split(",")]
    process_counts = [int(p) for p in str(args.processes).split(",")]
    designs = [d.strip() for d in args.designs.split(",")]
    if unknown := set(designs) - set(DESIGN_NAMES):
        raise SystemExit(f"Unknown design(s): {', '.join(sorted(unknown))}.")
    _, name = split_url(args.database_url)
    pg_admin(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"')
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="audit-bench-") as var_dir:
            setup_django(args.database_url, var_dir)
            for logger_name in ("audit", "casework", "agents"):
                logging.getLogger(logger_name).setLevel(logging.WARNING)
            header = machine(args.database_url)
            configs = [(w, p, d) for w in writer_counts for p in process_counts if p <= w for d in designs]
            trials: dict[tuple, list[dict]] = {c: [] for c in configs}
            # Repeats go round all the configurations in turn, so that a burst of load from
            # elsewhere on the machine hits every design rather than one.
            for repeat in range(args.repeats):
                for writers, processes, design in configs:
                    log.info("trial %d/%d: %s, %d writers in %d process(es), %g s", repeat + 1, args.repeats,
                             design, writers, processes, args.seconds)
                    result = trial(design, writers, processes, args.seconds, args.poll_ms / 1000)
                    log.info("  %.0f entries/s, chain %s", result["per_s"],
                             "intact" if result["chain_ok"] else "BROKEN")
                    trials[(writers, processes, design)].append(result)
            for runs in trials.values():
                ranked = sorted(runs, key=lambda r: r["per_s"])
                median = dict(ranked[len(ranked) // 2])
                median["range"] = (ranked[0]["per_s"], ranked[-1]["per_s"])
                median["all_ok"] = all(r["chain_ok"] for r in runs)
                median["repeats"] = len(runs)
                results.append(median)
            from django.db import connections

            from audit.services import _sequencer

            _sequencer.stop()
            connections.close_all()
    finally:
        if not args.keep:
            pg_admin(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    text = report(results, header, args)
    print()
    print(text)
    for r in results:
        if r["design"] == "background":
            print(f"{r['writers']} writers in {r['processes']} process(es), background sequencer: "
                  f"{r['per_s']:,.0f} entries/s, {r['per_s'] / OLD_DESIGN_FIGURE:.0f}x the ~{OLD_DESIGN_FIGURE}/s "
                  "the old design reached through the fraud pipeline.")
    if args.write_readme:
        write_block("audit_sequencer", text)
        print(f"\nWritten to {README.relative_to(REPO)}.")


if __name__ == "__main__":
    main()
