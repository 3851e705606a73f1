"""Prometheus metrics (prometheus-client).

Request latency is measured in this process. Case and agent-run counts are read from the
database at scrape time, so they are right whichever worker process did the work.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import connection
from django.db.models import Count, Min
from django.urls import Resolver404, resolve
from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

REQUEST_LATENCY = Histogram(
    "casework_http_request_duration_seconds", "HTTP request latency by route and method.",
    ["route", "method", "status"],
)
TASKS = Counter("casework_celery_tasks_total", "Celery tasks run in this process, by task and outcome.",
                ["task", "outcome"])


class RequestMetricsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        # The handler resolved the URL already (None when nothing matched, or when a middleware
        # answered first); resolving again cost every request a walk of the URL patterns.
        match = getattr(request, "resolver_match", None)
        if match is None:
            try:
                match = resolve(request.path_info)
            except Resolver404:
                match = None
        route = (match.route if match else "") or "unmatched"
        REQUEST_LATENCY.labels(route, request.method, str(response.status_code)).observe(
            time.perf_counter() - started
        )
        return response


QUEUED_OLDEST_HELP = ("Age of the oldest agent run still queued (0 when none is). A run is re-sent after "
                      "RUN_QUEUED_STALE_AFTER_SECONDS; an age well past that means no worker is taking runs.")


# Counts that apps above the platform read at scrape time (the outbox's deliveries, the actions
# by state): each registers a function returning its metric families from its AppConfig.ready,
# in INSTALLED_APPS order. The platform names none of them (issue 45: layers point one way).
DATABASE_FAMILIES: list[Callable[[], list[GaugeMetricFamily]]] = []


def metric_families_register(families: Callable[[], list[GaugeMetricFamily]]) -> None:
    if families not in DATABASE_FAMILIES:
        DATABASE_FAMILIES.append(families)


class DatabaseCollector:
    """Counts from the database: cases by type and status, agent runs by pipeline and status,
    the age of the oldest queued run, and what the apps registered (DATABASE_FAMILIES)."""

    def describe(self):
        # Named here so that registering the collector does not query the database.
        yield GaugeMetricFamily("casework_cases", "Cases by type and status.", labels=["case_type", "status"])
        yield GaugeMetricFamily("casework_agent_runs", "Agent runs by pipeline and status.",
                                labels=["pipeline", "status"])
        yield GaugeMetricFamily("casework_agent_runs_queued_oldest_seconds", QUEUED_OLDEST_HELP)

    def collect(self):
        from django.apps import apps
        from django.utils import timezone

        cases = GaugeMetricFamily("casework_cases", "Cases by type and status.", labels=["case_type", "status"])
        runs = GaugeMetricFamily("casework_agent_runs", "Agent runs by pipeline and status.",
                                 labels=["pipeline", "status"])
        queued_oldest = None
        try:
            Case = apps.get_model("cases", "Case")
            for row in Case.objects.order_by().values("case_type", "status").annotate(n=Count("id")):
                cases.add_metric([row["case_type"], row["status"]], row["n"])
        except Exception:  # noqa: BLE001 - a scrape must not fail because a table is missing
            pass
        try:
            AgentRun = apps.get_model("agents", "AgentRun")
            counts: dict[str, dict[str, int]] = {}
            for row in AgentRun.objects.order_by().values("pipeline", "status").annotate(n=Count("id")):
                counts.setdefault(row["pipeline"], {})[row["status"]] = row["n"]
            # Every status of every pipeline seen, zeros included: a series that drops to 0
            # (no run waiting once its case closed) reads as 0, not as a missing series.
            for pipeline, by_status in sorted(counts.items()):
                for status in AgentRun.Status.values:
                    runs.add_metric([pipeline, status], by_status.get(status, 0))
            # Indexed on (status, created_at): one index probe.
            oldest = AgentRun.objects.filter(status=AgentRun.Status.QUEUED).aggregate(t=Min("created_at"))["t"]
            queued_oldest = GaugeMetricFamily(
                "casework_agent_runs_queued_oldest_seconds", QUEUED_OLDEST_HELP,
                value=max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0)
        except Exception:  # noqa: BLE001
            pass
        registered = []
        for families in DATABASE_FAMILIES:
            try:
                registered += families()
            except Exception:  # noqa: BLE001 - one app's missing table leaves the others' counts
                pass
        audit = []
        try:
            from audit.checkpoint_services import checkpoint_metric_families

            audit = checkpoint_metric_families()
        except Exception:  # noqa: BLE001
            pass
        finally:
            if not connection.in_atomic_block:
                connection.close_if_unusable_or_obsolete()
        yield cases
        yield runs
        if queued_oldest is not None:
            yield queued_oldest
        yield from registered
        yield from audit


_registered = False
_database_collector: DatabaseCollector | None = None


def register_collectors() -> None:
    global _registered, _database_collector
    if not _registered:
        _database_collector = DatabaseCollector()
        REGISTRY.register(_database_collector)
        connect_task_signals()
        _registered = True


def database_collector_unregister() -> None:
    """Leave the database's counts out of this process's registry: a worker serving its own
    samples (casework.ops.worker_metrics) would otherwise query the database at every scrape
    and report the same series as the web's /metrics, once per worker process."""
    global _database_collector
    if _database_collector is not None:
        REGISTRY.unregister(_database_collector)
        _database_collector = None


def _count_task(outcome: str):
    def handler(sender=None, **kwargs):
        TASKS.labels(getattr(sender, "name", str(sender)), outcome).inc()

    return handler


def connect_task_signals() -> None:
    from celery import signals

    signals.task_success.connect(_count_task("success"), weak=False)
    signals.task_failure.connect(_count_task("failure"), weak=False)
    signals.task_retry.connect(_count_task("retry"), weak=False)
