"""Periodic work for access changes (scheduled in settings.CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task


@shared_task(ignore_result=True, soft_time_limit=240, time_limit=300)
def access_send_reminders() -> dict:
    """Send due reminders and escalations. Safe to run often and twice: each request is
    claimed with a conditional update before anything is sent."""
    from casework.access.reminders import requests_remind_due

    return requests_remind_due()


@shared_task(name="casework.access.tasks.notification_email_send", ignore_result=True, soft_time_limit=60,
             time_limit=90)
def notification_email_send_moved(notification_id: int) -> None:
    """An email queued before notifications moved to casework.cases.notifications (the
    migration kept each notification's id): hand it to the shared task."""
    from casework.cases.notifications.tasks import notification_email_send

    notification_email_send.delay(notification_id)
