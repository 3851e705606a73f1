"""Celery tasks that run pipelines, and the one function the domain calls to start one."""

from __future__ import annotations

import logging
from datetime import datetime

from celery import shared_task
from django.db import transaction

from agents import metrics
from agents.models import AgentRun
from agents.runtime.pipeline import RunInterrupted, execute_run
from audit.context import get_correlation_id, new_correlation_id
from audit.services import audit_record

logger = logging.getLogger(__name__)


def _warm_up_provider(**_kwargs) -> None:
    """Build the provider and its client (importing its SDK) before the worker takes a run:
    casework/celery.py calls this from worker_init (or, in a prefork child, from
    worker_process_init). From worker_ready, as before, the consumer had already started and
    the first runs shared the worker with the SDK's import, about 0.4 s of CPU each time a
    worker started (bench/README.md, runtime_throughput)."""
    from agents.llm.registry import provider_warm_up

    try:
        provider = provider_warm_up()
    except Exception:  # a worker without a working provider still runs (runs fail, named)
        logger.warning("LLM provider warm-up failed", exc_info=True)
    else:
        logger.info("LLM provider %s ready", provider.name)


def pipeline_enqueue(*, case=None, pipeline: str, mode: str, actor=None,
                     initial_state: dict | None = None, countdown: float = 0) -> AgentRun:
    """Create a queued run and start it once the surrounding transaction commits.

    `case` may be None for work that comes before its case exists (a message to match to a
    ticket); agents.services.run_attach_case gives the run its case later. With a countdown
    (seconds) the run starts no earlier than that: a retry spaced out by backoff."""
    from datetime import timedelta

    from django.utils import timezone

    run = AgentRun.objects.create(
        case=case, pipeline=pipeline, mode=mode, state=initial_state or {},
        requested_by=getattr(actor, "username", None) or (actor if isinstance(actor, str) else "system"),
        correlation_id=get_correlation_id() or new_correlation_id(),
        not_before=timezone.now() + timedelta(seconds=countdown) if countdown > 0 else None,
    )
    audit_record(actor=actor or "system", action="agent.run_queued", case=case, obj=run,
                 data={"pipeline": pipeline, "mode": mode, **({"countdown": countdown} if countdown > 0 else {})})
    if countdown > 0:
        transaction.on_commit(lambda: run_pipeline.apply_async((run.pk,), countdown=countdown))
    else:
        transaction.on_commit(lambda: run_pipeline.delay(run.pk))
    return run


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, soft_time_limit=900, time_limit=960,
             ignore_result=True)
def run_pipeline(self, run_id: int, claim_token: str | None = None) -> None:
    """Run or resume one pipeline run. A duplicate delivery finds the run claimed and does nothing.

    A transient database error (a restart, a lost connection) does not fail the run: the
    broken connections are dropped and the task is sent again with backoff, carrying the run's
    claim, and resumes it from its last saved step (agents.runtime.pipeline.RunInterrupted).
    Past the retries (about 12 minutes) the run is left running under its claim: its
    heartbeat goes stale and the sweeper resumes it."""
    from casework.db_transient import task_retry_transient

    try:
        run = execute_run(run_id, claim_token=claim_token)
    except RunInterrupted as exc:
        metrics.RUNS_INTERRUPTED.inc()
        task_retry_transient(self, exc, args=(run_id,), kwargs={"claim_token": exc.claim_token})
        return
    if run is not None and getattr(run, "wake_after", None):
        # It waits for the model (its endpoint's circuit breaker is open): wake it for the next try.
        run_pipeline.apply_async((run_id,), countdown=run.wake_after)


# Runs re-delivered per kind in one scan, oldest first; the next scan takes the rest.
SCAN_LIMIT = 500


@shared_task(ignore_result=True)
def resume_stale_runs(*, now: datetime | None = None) -> int:
    """Wake up every run the broker may have lost. Safe to run often; returns how many were sent.
    `now` is the moment the deadlines are measured from (the clock's, unless a test gives one).

    The database says which runs need a worker; a broker message is only a wake-up call, and
    one can be lost (the filesystem broker deletes it on fetch, Redis gives an unacked one
    back only after its visibility timeout). So, oldest first and at most SCAN_LIMIT of each:
      1. runs `queued` for longer than RUN_QUEUED_STALE_AFTER_SECONDS since they were created
         or last re-delivered, and overtaken (a run created after them started that long ago)
         or with no run started for that long: their message may never reach a worker;
      2. runs `running` whose heartbeat is older than RUN_STALE_AFTER_SECONDS: their worker died.
    Each is stamped `redelivered_at` once its wake-up is sent, so one run is re-sent at most
    once per deadline. A duplicate wake-up costs one conditional UPDATE: the run's claim
    (agents.runtime.pipeline.claim_run) lets one worker in and turns the others away.
    """
    from django.utils import timezone

    from casework.db_transient import scan_or_skip

    # The database restarting: the next scan (RUN_SCAN_INTERVAL_SECONDS) looks again.
    return scan_or_skip("Stale-run scan", lambda: _resume_stale_runs(now=now or timezone.now()), 0)


def _resume_stale_runs(*, now: datetime) -> int:
    from datetime import timedelta

    from django.conf import settings
    from django.db.models import Q

    queued_deadline = now - timedelta(seconds=settings.RUN_QUEUED_STALE_AFTER_SECONDS)
    stale = now - timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS)
    # redelivered_at is never before created_at, so the created_at bound (indexed with status)
    # holds for both kinds of queued run.
    # A queued run is presumed lost only once the queue has moved past it: workers take
    # messages oldest first, so a run created after it that started a deadline ago says its
    # message is gone; and when no run at all has started for a deadline, a worker would have
    # taken it. A backlog waiting its turn is not re-sent (it was: every deadline, all of it,
    # each re-sent message then queued ahead of the lost ones; bench/README.md, kill test).
    queued_past = (
        AgentRun.objects.filter(status=AgentRun.Status.QUEUED, created_at__lt=queued_deadline)
        .filter(Q(redelivered_at__isnull=True) | Q(redelivered_at__lt=queued_deadline))
        # A run scheduled for later is stale only a deadline after it was due.
        .filter(Q(not_before__isnull=True) | Q(not_before__lt=queued_deadline))
    )
    if AgentRun.objects.filter(started_at__gte=queued_deadline).exists():  # the queue is moving
        overtaken_by = (AgentRun.objects.filter(started_at__lt=queued_deadline)
                        .order_by("-created_at").values_list("created_at", flat=True).first())
        queued_past = queued_past.filter(created_at__lt=overtaken_by) if overtaken_by else queued_past.none()
    queued = list(queued_past.order_by("created_at", "pk").values_list("pk", flat=True)[:SCAN_LIMIT])
    running = list(
        AgentRun.objects.filter(status=AgentRun.Status.RUNNING, heartbeat_at__lt=stale)
        .filter(Q(redelivered_at__isnull=True) | Q(redelivered_at__lt=stale))
        .order_by("heartbeat_at", "pk").values_list("pk", flat=True)[:SCAN_LIMIT]
    )
    total = 0
    for reason, ids in (("queued", queued), ("stale_heartbeat", running)):
        if not ids:
            continue
        logger.warning("Re-delivering %d run(s) (%s), oldest first: %s", len(ids), reason, ids[:20])
        sent: list[int] = []
        try:
            for run_id in ids:
                # Its own queue: not behind the backlog of new runs (casework/settings.py).
                run_pipeline.apply_async((run_id,), queue="resume")
                sent.append(run_id)
        finally:
            # Only what was sent: if the broker refused one, the next scan tries the rest again.
            AgentRun.objects.filter(pk__in=sent).update(redelivered_at=now)
            metrics.RUNS_REDELIVERED.labels(reason).inc(len(sent))
        total += len(sent)
    return total


@shared_task(ignore_result=True)
def approvals_expire(*, now: datetime | None = None) -> int:
    """Expire every pending approval past AGENT_APPROVAL_TTL_SECONDS; its run ends "Approval
    expired" (agents.runtime.pause.pauses_expire). `now` is the clock's unless a test gives one."""
    from django.utils import timezone

    from agents.runtime.pause import pauses_expire

    return pauses_expire(now=now or timezone.now())
