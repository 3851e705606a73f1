"""Periodic work for access changes (scheduled in settings.CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task


@shared_task(ignore_result=True, soft_time_limit=240, time_limit=300)
def access_send_reminders() -> dict:
    """Send due reminders and escalations. Safe to run often and twice: each request is
    claimed with a conditional update before anything is sent."""
    from casework.access.reminders import requests_remind_due

    return requests_remind_due()
