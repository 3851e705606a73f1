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
