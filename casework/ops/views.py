from __future__ import annotations

import hmac
import logging
import os
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.db.models import Count, Min
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from casework.ops.llm_check import llm_endpoint, llm_unreachable

logger = logging.getLogger(__name__)


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


def _stuck_runs() -> dict | None:
    """Runs queued for twice RUN_QUEUED_STALE_AFTER_SECONDS, or None when there are none.

    The sweeper re-sends a queued run after RUN_QUEUED_STALE_AFTER_SECONDS, so one still
    queued after twice that is not a lost message: no worker is taking runs. One indexed
    query (agents.AgentRun status, created_at)."""
    from django.apps import apps

    AgentRun = apps.get_model("agents", "AgentRun")
    threshold = 2 * settings.RUN_QUEUED_STALE_AFTER_SECONDS
    now = timezone.now()
    stuck = AgentRun.objects.filter(
        status=AgentRun.Status.QUEUED, created_at__lt=now - timedelta(seconds=threshold)
    ).aggregate(n=Count("pk"), oldest=Min("created_at"))
    if not stuck["n"]:
        return None
    oldest = int((now - stuck["oldest"]).total_seconds())
    return {
        "queued_too_long": stuck["n"], "oldest_queued_seconds": oldest, "threshold_seconds": threshold,
        "message": (f"{stuck['n']} agent run(s) queued for more than {threshold} s, the oldest for {oldest} s: "
                    "no worker is taking runs. Check that the Celery workers and beat are running and "
                    "reach the broker and the database."),
    }


def _llm_breaker(database_ok: bool) -> dict | None:
    """The provider's circuit breaker when it is open (agents/llm/breaker.py), with how many
    runs wait for the model; None when it is closed."""
    from django.apps import apps

    from agents.llm.breaker import breaker_for

    status = breaker_for(settings.LLM_PROVIDER).status()
    if status is None:
        return None
    waiting = None
    if database_ok:
        AgentRun = apps.get_model("agents", "AgentRun")
        try:
            # A run's state is encrypted at rest: the database cannot look into it, so the runs
            # scheduled for later (a wait for the model sets not_before) are read and counted here.
            waiting = sum(1 for state in AgentRun.objects.filter(
                status=AgentRun.Status.QUEUED, not_before__isnull=False).values_list("state", flat=True).iterator()
                if "waiting_for_model" in state)
        except Exception:  # noqa: BLE001 - a health probe answers whatever the count does
            logger.exception("/healthz could not count runs waiting for the model")
    status["runs_waiting"] = waiting
    status["message"] = (f"the {status['provider']} endpoint's circuit breaker is {status['state'].replace('_', '-')} "
                         f"since {status['since']} after {status['failures']} connection failure(s) "
                         f"({status['error']}); {waiting if waiting is not None else 'some'} run(s) wait for the "
                         f"model; next try after {status['retry_at']}")
    return status


@login_not_required
@require_GET
def healthz(request):
    """200 when the database and the broker answer; 503 naming the one that does not.

    "degraded" (still 200: the site works, but investigations wait) when agent runs have
    been queued too long (the body's "runs" part says how many and how old) or when the LLM
    endpoint does not answer (the "llm" check names it; the offline provider needs none) or
    its circuit breaker is open (the "llm_breaker" part says since when and how many runs wait)."""
    checks = {"database": _check_database(), "broker": _check_broker()}
    body = {
        "status": "ok" if not any(checks.values()) else "unavailable",
        "checks": {name: ("ok" if err is None else f"failing: {err}") for name, err in checks.items()},
    }
    if checks["database"] is None:
        try:
            runs = _stuck_runs()
        except Exception:  # noqa: BLE001 - a missing table must not turn a health probe into a 500
            logger.exception("/healthz could not count queued runs")
            runs = None
        if runs:
            body["checks"]["runs"] = f"degraded: {runs['message']}"
            body["runs"] = runs
            if body["status"] == "ok":
                body["status"] = "degraded"
    url = llm_endpoint()
    if url is None:
        body["checks"]["llm"] = "ok: offline provider"
    else:
        error = llm_unreachable(url)
        breaker = _llm_breaker(checks["database"] is None)
        if breaker is not None:
            body["llm_breaker"] = breaker
            error = breaker["message"]
        body["checks"]["llm"] = "ok" if error is None else f"degraded: {error}"
        if error and body["status"] == "ok":
            body["status"] = "degraded"
    return JsonResponse(body, status=503 if body["status"] == "unavailable" else 200)


@login_not_required
@require_GET
def metrics(request):
    """Prometheus text. With PROMETHEUS_MULTIPROC_DIR set (make run sets it), the samples of
    every process on this machine, web and worker, are merged: prometheus-client's
    multiprocess mode. Otherwise this process's own registry.

    With METRICS_TOKEN set, only `Authorization: Bearer <METRICS_TOKEN>` is answered (401
    otherwise): the figures name pipelines, users' activity and error rates."""
    expected = settings.METRICS_TOKEN
    if expected:
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {expected}".encode()):
            response = HttpResponse("A bearer token is needed for /metrics.\n", status=401,
                                    content_type="text/plain")
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import CollectorRegistry, multiprocess

        from casework.ops.metrics import DatabaseCollector

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        registry.register(DatabaseCollector())
    else:
        registry = REGISTRY
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
