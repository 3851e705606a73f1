"""SMTP: sending a notification's email (the only module that talks to the mail server)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone

from casework.access.links import absolute_url
from casework.access.models import (
    Notification,
)

logger = logging.getLogger(__name__)


def _email(notification_id: int) -> None:
    note = Notification.objects.get(pk=notification_id)
    text = note.body + (f"\n\n{absolute_url(note.url) if note.url.startswith('/') else note.url}" if note.url else "")
    try:
        send_mail(note.subject, text, settings.DEFAULT_FROM_EMAIL, [note.recipient_email])
    except Exception:  # noqa: BLE001 - an unreachable mail server must not undo the request
        logger.exception("Could not email notification %s to %s", note.pk, note.recipient_email)
        return
    Notification.objects.filter(pk=note.pk).update(emailed_at=timezone.now())

