"""A Celery worker's own Prometheus endpoint, for workers on machines with no web server.

The web's /metrics shows a worker's samples only through PROMETHEUS_MULTIPROC_DIR on the
same machine. A worker started with WORKER_METRICS_PORT serves them itself (LLM call
duration, tokens, errors and retries, tool calls, the transactions planner's `ops_agent_*`
series, tasks): casework/celery.py calls worker_metrics_start from `worker_init`, before
the worker consumes. What it serves:

- with PROMETHEUS_MULTIPROC_DIR: every process writing to that directory, merged
  (prometheus-client's MultiProcessCollector), as /metrics does. This is how a prefork
  worker serves its children's samples: the parent listens, each child writes its own file.
- otherwise, a threads (or solo) pool: this process's registry, without the database's
  counts (casework.ops.metrics.DatabaseCollector): the web's /metrics has them, and each
  worker would query the database at every scrape to report the same series again.
- a prefork pool without the directory: nothing, and an error in the log says why (the
  samples are in children that come and go; the parent has none of them).

Served by wsgiref in a daemon thread over prometheus-client's make_wsgi_app and its
threading server, as its start_http_server does, but behind the same bearer token as
/metrics when METRICS_TOKEN is set (start_http_server cannot ask for one). A port that
cannot be bound is an error in the log and the worker carries on without the endpoint:
its runs matter more than its metrics, and Prometheus shows the target down.
"""

from __future__ import annotations

import hmac
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import REGISTRY, CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

_server: WSGIServer | None = None


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the signature of the method overridden
        """No line per scrape on the worker's stderr (every 15 s, per process)."""


def worker_metrics_app(registry: Collector, *, token: str) -> Callable:
    """prometheus-client's WSGI app, answering only `Authorization: Bearer <token>` when a
    token is given (401 otherwise), like the web's /metrics."""
    metrics = make_wsgi_app(registry)
    expected = f"Bearer {token}".encode()

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        # WSGI hands headers over as latin-1 text: encoding them back gives the bytes sent.
        given = environ.get("HTTP_AUTHORIZATION", "").encode("latin-1", "replace")
        if token and not hmac.compare_digest(given, expected):
            start_response("401 Unauthorized", [("Content-Type", "text/plain; charset=utf-8"),
                                                ("WWW-Authenticate", 'Bearer realm="metrics"')])
            return [b"A bearer token is needed for /metrics.\n"]
        return metrics(environ, start_response)

    return app


def worker_metrics_serve(*, registry: Collector, port: int, addr: str, token: str) -> WSGIServer | None:
    """Listen on addr:port in a daemon thread; None, with an error in the log, when the
    address cannot be bound (a port in use, an unknown address)."""
    try:
        # The address family from the address, so that "::" listens on IPv6 (as
        # prometheus-client's start_http_server does).
        family = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        server_class = type("WorkerMetricsServer", (ThreadingWSGIServer,), {"address_family": family})
        server = make_server(addr, port, worker_metrics_app(registry, token=token), server_class, _QuietHandler)
    except OSError as exc:
        logger.error("Worker metrics: cannot listen on %s port %s (WORKER_METRICS_ADDR, WORKER_METRICS_PORT): %s. "
                     "This worker runs without a metrics endpoint; give each worker process a port of its own.",
                     addr, port, exc.strerror or exc)
        return None
    threading.Thread(target=server.serve_forever, name="worker-metrics", daemon=True).start()
    logger.info("Worker metrics on http://%s:%s/metrics%s", addr, port,
                " (bearer token: METRICS_TOKEN)" if token else "")
    return server


def worker_metrics_start(*, prefork: bool) -> WSGIServer | None:
    """Serve this worker's metrics when WORKER_METRICS_PORT is set (worker_init)."""
    global _server
    from django.conf import settings

    port = settings.WORKER_METRICS_PORT
    if not port or _server is not None:
        return _server
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry: Collector = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    elif prefork:
        logger.error("Worker metrics: WORKER_METRICS_PORT with --pool=prefork needs PROMETHEUS_MULTIPROC_DIR (an "
                     "empty directory for this worker): the samples are in the child processes, and the parent "
                     "serves them merged from there. This worker runs without a metrics endpoint.")
        return None
    else:
        from casework.ops.metrics import database_collector_unregister

        database_collector_unregister()
        registry = REGISTRY
    _server = worker_metrics_serve(registry=registry, port=port, addr=settings.WORKER_METRICS_ADDR,
                                   token=settings.METRICS_TOKEN)
    return _server


def worker_metrics_close_inherited() -> None:
    """In a prefork child (worker_process_init): close the listening socket forked from the
    parent. Only the parent's thread answers on it; the child's copy would keep the port
    bound after the parent has gone."""
    global _server
    if _server is not None:
        _server.server_close()
        _server = None
