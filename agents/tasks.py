"""Celery tasks that run pipelines, and the one function the domain calls to start one."""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import transaction

from agents.models import AgentRun
from audit.context import get_correlation_id, new_correlation_id
from audit.services import audit_record

logger = logging.getLogger(__name__)


def pipeline_enqueue(*, case, pipeline: str, mode: str, actor=None, initial_state: dict | None = None) -> AgentRun:
    """Create a queued run for the case and start it once the surrounding transaction commits."""
    run = AgentRun.objects.create(
        case=case, pipeline=pipeline, mode=mode, state=initial_state or {},
        requested_by=getattr(actor, "username", None) or (actor if isinstance(actor, str) else "system"),
        correlation_id=get_correlation_id() or new_correlation_id(),
    )
    audit_record(actor=actor or "system", action="agent.run_queued", case=case, obj=run,
                 data={"pipeline": pipeline, "mode": mode})
    transaction.on_commit(lambda: run_pipeline.delay(run.pk))
    return run


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=900, time_limit=960, ignore_result=True)
def run_pipeline(run_id: int) -> None:
    """Run or resume one pipeline run. A duplicate delivery finds the run claimed and does nothing."""
    from agents.runtime.pipeline import execute_run

    execute_run(run_id)


@shared_task(ignore_result=True)
def resume_stale_runs() -> int:
    """Re-deliver runs whose worker died (running with a stale heartbeat). Safe to run often."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    stale = timezone.now() - timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS)
    ids = list(AgentRun.objects.filter(status=AgentRun.Status.RUNNING, heartbeat_at__lt=stale)
               .values_list("pk", flat=True)[:100])
    for run_id in ids:
        run_pipeline.delay(run_id)
    return len(ids)
