"""Periodic support work (settings.CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task


@shared_task(ignore_result=True, soft_time_limit=240, time_limit=300)
def support_auto_close() -> dict:
    """Close for inactivity the tickets pending on a silent customer; safe to run twice."""
    from casework.support.waiting import support_auto_close as scan

    return scan()
