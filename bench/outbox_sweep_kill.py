"""The Celery app of bench/outbox_delivery.py's worker 1 under `--kill sweep`: casework's own
app, plus a trap that kills this worker (SIGKILL on itself: nothing of ours runs after it)
inside a webhook sweep once the bench arms it (the file OUTBOX_BENCH_KILL_FILE exists).

Inside a sweep that sends messages it dies right after handing the broker the first one, with
the rest of the sweep's rows held; a sweep that finds nothing to send (the usual case once
retries go by their own ETA messages) is where it dies after 3 s armed without a busier one.
Either way the worker also dies holding its requests in flight and the ETA messages of the
retries it scheduled. It writes where it died to OUTBOX_BENCH_KILL_FILE + ".where" first.

Started as `celery -A outbox_sweep_kill worker ...` with bench/ on PYTHONPATH. Not a test.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from celery.signals import task_postrun, task_prerun, worker_init

from casework.celery import app  # noqa: F401 - the app Celery's -A finds here (and the signals' module)

ARM = os.environ.get("OUTBOX_BENCH_KILL_FILE", "")
SWEEP = "casework.outbox.tasks.outbox_deliver_due"
local = threading.local()


def _armed_for() -> float | None:
    try:
        return time.time() - os.stat(ARM).st_mtime
    except OSError:
        return None


def _die(where: str) -> None:
    with open(ARM + ".where", "w") as out:
        out.write(f"{time.time()} {where}\n")
    os.kill(os.getpid(), signal.SIGKILL)


@task_prerun.connect(weak=False)
def _sweep_starts(task=None, **kwargs):
    if task is not None and task.name == SWEEP:
        local.sweep_sent = 0


@task_postrun.connect(weak=False)
def _sweep_ends(task=None, **kwargs):
    if task is None or task.name != SWEEP:
        return
    sent, local.sweep_sent = local.sweep_sent, None
    armed = _armed_for()
    if armed is not None and sent == 0 and armed > 3:
        _die("at the end of a sweep that had nothing to send")


@worker_init.connect(weak=False)
def _trap_sends(**kwargs) -> None:
    """Once Django is set up (the worker's start): wrap the delivery task's apply_async."""

    outbox_deliver = app.tasks["casework.outbox.tasks.outbox_deliver"]
    send = outbox_deliver.apply_async

    def apply_async(*args, **kwargs):
        result = send(*args, **kwargs)
        sent = getattr(local, "sweep_sent", None)
        if sent is not None:
            local.sweep_sent = sent + 1
            if _armed_for() is not None:
                _die("in a sweep, right after it handed the broker its first message")
        return result

    outbox_deliver.apply_async = apply_async
