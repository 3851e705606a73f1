from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(soft_time_limit=600, time_limit=660)
def privacy_retention_enforce(now: str | None = None) -> dict:
    """The beat task: one retention pass (casework/privacy/retention.py) at `now` (ISO; the
    clock when not given). A second delivery finds nothing left to purge."""
    from datetime import datetime

    from django.utils import timezone

    from casework.privacy.retention import retention_run

    report = retention_run(now=datetime.fromisoformat(now) if now else timezone.now())
    if report.purged or report.kept_legal_hold:
        logger.info("retention: %s", report.as_dict())
    return report.as_dict()


@shared_task(soft_time_limit=3600, time_limit=3660, acks_late=True)
def privacy_erasure_run(request_id: int) -> str:
    """Run an approved erasure request to its end (casework/privacy/erasure.py), in batches that
    each commit with the request's cursor: a redelivery after a killed worker continues where
    it stopped, and one for a request already done does nothing."""
    from casework.privacy.erasure_run import erasure_failed, erasure_run

    try:
        return erasure_run(request_id=request_id).status
    except Exception as error:
        erasure_failed(request_id=request_id, error=error)
        logger.exception("erasure request %s failed; it resumes at its cursor", request_id)
        raise


@shared_task(soft_time_limit=60, time_limit=90)
def privacy_erasure_sweep(now: str | None = None) -> list[str]:
    """The beat task: send again the erasure requests stuck approved or running (a worker killed
    mid-batch, a lost message), at `now` (ISO; the clock when not given). They continue at their
    cursor (casework/privacy/erasure_run.py, erasure_sweep)."""
    from datetime import datetime

    from django.utils import timezone

    from casework.privacy.erasure_run import erasure_sweep

    sent = erasure_sweep(now=datetime.fromisoformat(now) if now else timezone.now(),
                         send=privacy_erasure_run.delay)
    if sent:
        logger.warning("erasure requests without progress sent again: %s", ", ".join(sent))
    return sent
