"""Transient database errors: the ones a retry can get past (a restart, a failover, a lost
connection, a serialization failure or deadlock), told apart from the ones it cannot.

A database restart is routine (a failover, a minor upgrade, a managed database's maintenance
window): it must cost latency, never a case. Workers (agents.tasks.run_pipeline, the chat
answer, outbox deliveries, the SLA scan) retry their work with backoff when they meet one;
web requests that write are answered 503 with Retry-After (casework.db_transient middleware
below and casework.api_errors), never 500 with half a write.

Classified by SQLSTATE where the driver gives one (psycopg 3: `sqlstate`), else by the
message PostgreSQL and libpq write for a connection that went away; SQLite's "database is
locked" counts too (a writer held the lock past the busy timeout).
"""

from __future__ import annotations

import logging
import random

from django.db import DatabaseError, InterfaceError, OperationalError, connections

logger = logging.getLogger(__name__)

# SQLSTATE classes and codes a retry can get past.
TRANSIENT_SQLSTATE_CLASSES = ("08",)  # connection exception (refused, lost, failure)
TRANSIENT_SQLSTATES = {
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "57P01",  # admin_shutdown: "terminating connection due to administrator command"
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now: "the database system is starting up / shutting down"
    "53300",  # too_many_connections
    "55P03",  # lock_not_available
}
# What PostgreSQL, libpq and psycopg say when there is no SQLSTATE to read (the connection
# broke before an answer came), lower-case.
TRANSIENT_MESSAGES = (
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "terminating connection due to administrator command",
    "server closed the connection unexpectedly",
    "the connection is closed",
    "connection already closed",
    "connection is lost",
    "connection refused",
    "could not connect to server",
    "connection failed",
    "consuming input failed",
    "could not receive data from server",
    "could not send data to server",
    "ssl connection has been closed unexpectedly",
    "no connection to the server",
    "terminating connection due to conflict with recovery",
    "database is locked",  # SQLite: a writer held the lock past the busy timeout
)


def _chain(exc: BaseException):
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_transient_db_error(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) is a database error a retry can get past."""
    for error in _chain(exc):
        sqlstate = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
        if isinstance(sqlstate, str) and sqlstate:
            if sqlstate in TRANSIENT_SQLSTATES or sqlstate[:2] in TRANSIENT_SQLSTATE_CLASSES:
                return True
        if isinstance(error, OperationalError | InterfaceError) or _is_driver_error(error):
            message = str(error).lower()
            if any(fragment in message for fragment in TRANSIENT_MESSAGES):
                return True
            # A psycopg InterfaceError/OperationalError with no SQLSTATE is the connection itself.
            if isinstance(error, InterfaceError) or (_is_driver_error(error) and not sqlstate
                                                     and type(error).__name__ in ("OperationalError",
                                                                                  "InterfaceError")):
                return True
    return False


def _is_driver_error(error: BaseException) -> bool:
    module = type(error).__module__ or ""
    return module.startswith(("psycopg", "sqlite3")) and isinstance(error, Exception) and (
        type(error).__name__ in ("OperationalError", "InterfaceError", "SerializationFailure",
                                 "DeadlockDetected", "AdminShutdown", "CannotConnectNow", "CrashShutdown"))


def db_connections_reset() -> None:
    """Drop every connection of this thread that may be broken, so the next query opens a
    fresh one. Outside a transaction the connection is closed; inside one (a test's atomic
    block, say) Django marks it for rollback and closes it when the block ends."""
    for conn in connections.all(initialized_only=True):
        try:
            if conn.in_atomic_block:
                conn.close_if_unusable_or_obsolete()
            else:
                conn.close()
        except DatabaseError:  # closing a dead connection may itself complain
            logger.debug("Closing connection %s failed", conn.alias, exc_info=True)


def backoff_seconds(attempt: int, *, initial: float = 0.5, cap: float = 30.0, rng: random.Random | None = None) -> float:
    """Exponential backoff with up to 25% jitter: 0.5 s, 1 s, 2 s ... capped at `cap`.
    `attempt` counts from 0 (the first retry)."""
    base = min(cap, initial * 2 ** max(0, attempt))
    return min(cap, base + base * 0.25 * (rng or random).random())


def task_retry_transient(task, exc: BaseException, *, args: tuple | None = None, kwargs: dict | None = None,
                         max_retries: int = 30):
    """From a bound Celery task that met a transient database error: drop the broken
    connections and send the task again with backoff (0.5 s, 1 s ... 30 s: about 12 minutes
    over `max_retries`, longer than a restart or a failover). Past that it gives up quietly
    (returns None): the periodic sweeps find the work again. Use as `raise`-able: it raises
    Celery's Retry, or returns the eager retry's result.

    In Celery's eager mode (tests, CELERY_TASK_ALWAYS_EAGER) a retry would be raised to the
    caller instead of run (eager exceptions propagate): it is run here at once."""
    db_connections_reset()
    request = task.request
    args = tuple(request.args or ()) if args is None else args
    kwargs = dict(request.kwargs or {}) if kwargs is None else kwargs
    if request.retries >= max_retries:
        logger.error("%s: still failing after %d retries on a transient database error (%s); left to the "
                     "periodic sweep.", task.name, request.retries, exc)
        return None
    countdown = backoff_seconds(request.retries)
    logger.warning("%s: transient database error (%s: %s); retrying in %.1f s (retry %d).", task.name,
                   type(exc).__name__, str(exc).strip()[:200], countdown, request.retries + 1)
    if request.is_eager:
        return task.apply(args=args, kwargs=kwargs, retries=request.retries + 1).get(disable_sync_subtasks=False)
    raise task.retry(args=args, kwargs=kwargs, countdown=countdown, exc=exc, max_retries=max_retries)
