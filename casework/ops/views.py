from __future__ import annotations

import os

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest


def _check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure means "not answering"
        return f"{type(exc).__name__}: {exc}"
    return None


def _check_broker() -> str | None:
    from casework.celery import app

    try:
        with app.connection_for_write() as conn:
            # No back-off between tries: a health probe must answer quickly either way.
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"
    return None


@login_not_required
@require_GET
def healthz(request):
    """200 when the database and the broker answer; 503 naming the one that does not."""
    checks = {"database": _check_database(), "broker": _check_broker()}
    body = {
        "status": "ok" if not any(checks.values()) else "unavailable",
        "checks": {name: ("ok" if err is None else f"failing: {err}") for name, err in checks.items()},
    }
    return JsonResponse(body, status=200 if body["status"] == "ok" else 503)


@login_not_required
@require_GET
def metrics(request):
    """Prometheus text. With PROMETHEUS_MULTIPROC_DIR set (make run sets it), the samples of
    every process on this machine, web and worker, are merged: prometheus-client's
    multiprocess mode. Otherwise this process's own registry."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import CollectorRegistry, multiprocess

        from casework.ops.metrics import DatabaseCollector

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        registry.register(DatabaseCollector())
    else:
        registry = REGISTRY
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
