"""Celery tasks of the notifications app: one email per notification, and the SLA scan
(scheduled in settings.CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task

# Spaced out so that a mail server's blip is not a lost email: 30 s, 2 min, 10 min.
EMAIL_RETRY_COUNTDOWNS = (30, 120, 600)


@shared_task(bind=True, ignore_result=True, max_retries=len(EMAIL_RETRY_COUNTDOWNS), soft_time_limit=60,
             time_limit=90, acks_late=True)
def notification_email_send(self, notification_id: int) -> None:
    """Email one notification; on failure retry later, and after the last retry record the
    failure on the notification. Idempotent: an emailed notification is not sent twice."""
    from casework.cases.notifications.email import notification_email, notification_email_failed

    try:
        notification_email(notification_id)
    except Exception as exc:  # noqa: BLE001 - SMTP, DNS, timeouts: all worth a retry, then a record
        if self.request.retries < self.max_retries:
            raise self.retry(exc=exc, countdown=EMAIL_RETRY_COUNTDOWNS[self.request.retries]) from exc
        notification_email_failed(notification_id, f"{type(exc).__name__}: {exc}")


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
