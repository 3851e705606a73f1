"""Celery tasks of the notifications app: one email per notification (defined beside the
sending, casework/cases/notifications/email.py: the services enqueue it, and the SLA scan below
calls the services), and the SLA scan (scheduled in settings.CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task

# Imported here so that the worker's autodiscovery registers it, and callers find it here.
from casework.cases.notifications.email import notification_email_send  # noqa: F401


@shared_task(bind=True, ignore_result=True, soft_time_limit=240, time_limit=300)
def cases_sla_check(self) -> dict:
    """Warn before deadlines and record breaches; safe to run often and twice. A transient
    database error (a restart) sends the scan again with backoff rather than skipping a
    period: each warning and breach is recorded once, so a scan cut halfway is taken up."""
    from casework.cases.notifications.deadlines import cases_sla_scan
    from casework.db_transient import is_transient_db_error, task_retry_transient

    try:
        return cases_sla_scan()
    except Exception as exc:
        if not is_transient_db_error(exc):
            raise
        return task_retry_transient(self, exc, max_retries=8) or {}
