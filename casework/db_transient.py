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
from collections.abc import Callable
from typing import TypeVar

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


T = TypeVar("T")


def scan_or_skip(what: str, scan: Callable[[], T], skipped: T) -> T:
    """A periodic scan (a beat task) that meets a transient database error (a restart) is
    skipped, not failed: the broken connections are dropped and the next scan looks again.
    Any other error is raised."""
    try:
        return scan()
    except Exception as exc:
        if not is_transient_db_error(exc):
            raise
        db_connections_reset()
        logger.warning("%s skipped: transient database error (%s: %s).", what, type(exc).__name__, exc)
        return skipped


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


# --- Web requests -----------------------------------------------------------------------------

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
# What a 503 asks the client to wait: a fast restart takes a few seconds.
RETRY_AFTER_SECONDS = 5


class TransientDatabaseErrorMiddleware:
    """A request that meets a transient database error (a restart, a failover, a lost
    connection) is never a 500 with half a write:
      - the broken connections are dropped, so the next query opens a fresh one;
      - a safe request (GET, HEAD, OPTIONS: it writes nothing) is run again once;
      - otherwise, or if it fails again, 503 with Retry-After (JSON under /api/, a short
        page elsewhere). A write's transaction rolled back with the error: nothing of it stands.
    A view's error is taken in process_exception (DRF's handler leaves it to Django); one in
    another middleware (a session read) is noted by the got_request_exception signal."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if getattr(request, "_db_transient_error", None) is None:
            return response
        db_connections_reset()
        if request.method in SAFE_METHODS and not getattr(request, "_db_transient_retried", False):
            request._db_transient_retried = True
            request._db_transient_error = None
            logger.warning("%s %s met a transient database error; running it again.", request.method,
                           request.path)
            response = self.get_response(request)
            if getattr(request, "_db_transient_error", None) is None:
                return response
            db_connections_reset()
        return unavailable_response(request)

    def process_exception(self, request, exception):
        if not is_transient_db_error(exception):
            return None
        logger.warning("%s %s: transient database error (%s: %s).", request.method, request.path,
                       type(exception).__name__, str(exception).strip()[:200])
        request._db_transient_error = exception
        return unavailable_response(request)  # replaced in __call__ by the retry, for a safe request


def note_transient_error(sender, request=None, **_kwargs) -> None:
    """got_request_exception: mark a request whose uncaught error (outside a view) was transient."""
    import sys

    error = sys.exc_info()[1]
    if request is not None and error is not None and is_transient_db_error(error):
        request._db_transient_error = error


def unavailable_response(request):
    from django.http import JsonResponse
    from django.template import loader

    if request.path_info.startswith("/api/"):
        response = JsonResponse({"detail": "The database did not answer (it may be restarting); nothing was saved. "
                                           f"Try again in {RETRY_AFTER_SECONDS} seconds.",
                                 "code": "database_unavailable"}, status=503)
    else:
        from django.http import HttpResponse

        # Rendered without the site's base template: that would read the session and the user.
        body = loader.get_template("503.html").render({"wait": RETRY_AFTER_SECONDS})
        response = HttpResponse(body, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
