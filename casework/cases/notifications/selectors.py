"""Reads of notifications."""

from __future__ import annotations

from django.db.models import QuerySet

from casework.cases.notifications.models import Notification


def notifications_for(user) -> QuerySet[Notification]:
    return Notification.objects.filter(recipient_user=user).select_related("case").order_by("-created_at", "-id")


def unread_count(user) -> int:
    """The navigation's badge: one COUNT on the (recipient_user, read_at) index."""
    if not getattr(user, "is_authenticated", False):
        return 0
    return Notification.objects.filter(recipient_user=user, read_at__isnull=True).count()
