"""Notifications of the access flow, sent through the shared mechanism
(casework/cases/notifications): one model, one inbox, one email task for every case type."""

from __future__ import annotations

from django.contrib.auth.models import User

from casework.cases.notifications.models import Notification
from casework.cases.notifications.services import (
    notification_mark_read,
    notifications_mark_all_read,
    notifications_mark_read_for_target,
)
from casework.cases.notifications.services import notification_send as _shared_send

__all__ = ["investigators_to_notify", "notification_mark_read", "notification_send", "notifications_mark_all_read",
           "notifications_mark_read_for_target", "notify_answer"]


def notification_send(*, actor, kind: str, subject: str, body: str, url: str = "", case=None,
                      user: User | None = None, email: str = "", name: str = "", request=None) -> Notification:
    """The shared notification_send, with the request the notification carries as its target
    (answering the request marks it read; the case page shows its email delivery)."""
    return _shared_send(actor=actor, kind=kind, subject=subject, body=body, url=url, case=case, user=user,
                        email=email, name=name, target=request)


def investigators_to_notify(case) -> list[User]:
    from casework.people.roles import INVESTIGATOR

    if case.assignee_id:
        return [case.assignee]
    return list(User.objects.filter(groups__name=INVESTIGATOR, is_active=True).order_by("username"))


def notify_answer(*, actor, request, who: str, summary: str) -> list[Notification]:
    """The employee or the manager answered a request: tell the case's investigator(s)."""
    from django.urls import reverse

    case = request.mutation.case
    return [notification_send(actor=actor, kind=Notification.Kind.ANSWER, case=case, user=user,
                              subject=f"{case.reference}: {who} answered",
                              body=f"{who} answered the request about {case.title}: {summary[:300]}",
                              url=reverse("cases:detail", args=[case.reference]))
            for user in investigators_to_notify(case)]
