"""Reads of notifications: a person's own, and of those about a case only the ones whose case
they may still see (casework.cases.visibility). Someone who left the team stops seeing what
told them about its cases; a notification carrying something addressed to them (`target`: an
access request to a manager, who answers it outside the team) stays theirs."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from casework.cases.notifications.models import Notification
from casework.cases.visibility import case_visible, visible_q


def notification_shown_q(user) -> Q:
    """Which of a person's notifications they are shown: none about a case they may not see."""
    return Q(case__isnull=True) | Q(target_type__isnull=False) | visible_q(user, "case__")


def notifications_for(user) -> QuerySet[Notification]:
    return (Notification.objects.filter(notification_shown_q(user), recipient_user=user).select_related("case")
            .order_by("-created_at", "-id"))


def unread_count(user) -> int:
    """The navigation's badge: one COUNT on the (recipient_user, read_at) index, of the
    notifications the inbox shows."""
    if not getattr(user, "is_authenticated", False):
        return 0
    return Notification.objects.filter(notification_shown_q(user), recipient_user=user, read_at__isnull=True).count()


def notification_may_reach(user: User | None, case, target=None) -> bool:
    """Whether a notification about `case` may go to `user`: only to people who may see the
    case (casework.cases.visibility), so that a broadcast ("every investigator") reaches the
    case's team and no one else. What is addressed to someone (`target`: an access request to a
    manager, a link to an employee without a login) goes to them: the request is theirs to answer."""
    return case is None or user is None or target is not None or case_visible(user, case)
