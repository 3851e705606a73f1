"""Every write to a notification goes through these functions.

A notification is created in the transaction of what caused it and audited there; its email
goes out from a Celery task once that transaction commits (casework/cases/notifications/tasks.py).
It is marked read when its person acts on what it is about (opens the case, answers the
request), not only when they click it.
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents.runtime.effects import effect_key_next
from audit.services import audit_record
from casework.cases.navigation import nav_changed
from casework.cases.notifications.models import Notification, NotificationPreference
from casework.cases.notifications.selectors import notification_may_reach
from casework.cases.sla import DONE_STATUSES
from casework.errors import DomainError

logger = logging.getLogger(__name__)


def _wants_email(user: User | None, kind: str) -> bool:
    if user is None:
        return True  # someone without a login (an employee) is reached only by email
    preference = NotificationPreference.objects.filter(user=user).first()
    return preference is None or preference.wants_email(kind)


@transaction.atomic
def notification_send(*, actor, kind: str, subject: str, body: str, url: str = "", case=None,
                      user: User | None = None, email: str = "", name: str = "", target=None) -> Notification | None:
    """An in-app notification (when the person has a login) and an email (when they have an
    address and want this kind by email), handed to a Celery task (retries, EMAIL_TIMEOUT)
    once the transaction commits. `target`: the object the notification asks them to act on.
    None, and nothing sent, when `case` is one the person may not see (notification_may_reach)."""
    if not notification_may_reach(user, case, target):
        logger.info("Notification %r about %s not sent to %s: not in their need-to-know.", str(kind),
                    case.reference, user.get_username())
        return None
    email = email or (user.email if user else "")
    name = name or (user.get_full_name() or user.get_username() if user else "")
    if not user and not email:
        raise DomainError(f"{name or 'This person'} has neither a login nor an email address to notify.",
                          code="no_channel")
    if email and not _wants_email(user, kind):
        email = ""
    # Inside an approved call (agents.runtime.effects) the notification is sent once under its
    # key: the same call made again after its worker died gets the first one back.
    effect_key = effect_key_next() or ""
    if effect_key and (sent := Notification.objects.filter(effect_key=effect_key).first()) is not None:
        logger.info("Notification %s already sent as effect %s: not sent again.", sent.pk, effect_key)
        return sent
    note = Notification.objects.create(
        recipient_user=user, recipient_email=email, recipient_name=name, case=case, kind=kind,
        subject=subject[:200], body=body, url=url,
        target_type=ContentType.objects.get_for_model(target) if target is not None else None,
        target_id=target.pk if target is not None else None, effect_key=effect_key,
    )
    audit_record(actor=actor, action="notification.sent", case=case, obj=note,
                 data={"kind": kind, "to": email or name, "in_app": user is not None, "subject": note.subject})
    if email:
        from casework.cases.notifications.email import notification_email_send

        transaction.on_commit(lambda: notification_email_send.delay(note.pk))
    return note


def notification_mark_read(*, user: User, notification: Notification) -> None:
    if notification.recipient_user_id != user.pk:
        raise PermissionDenied("This notification is not yours.")
    _read(user, Notification.objects.filter(pk=notification.pk))


def _read(user: User, notifications) -> int:
    """Mark these unread notifications read; the navigation's count changes with them (a
    queryset UPDATE sends no signal, so the navigation is told here)."""
    updated = notifications.filter(read_at__isnull=True).update(read_at=timezone.now())
    if updated:
        nav_changed(user_id=user.pk)
    return updated


def notifications_mark_all_read(*, user: User) -> int:
    return _read(user, Notification.objects.filter(recipient_user=user))


def notifications_mark_read_for_case(*, user: User, case) -> int:
    """The person opened the case: what told them about it is read. One UPDATE."""
    if not getattr(user, "is_authenticated", False):
        return 0
    return _read(user, Notification.objects.filter(recipient_user=user, case=case))


def notifications_mark_read_for_target(*, user: User, target) -> int:
    """The person answered what the notification asked (an access request): it is read."""
    return _read(user, Notification.objects.filter(
        recipient_user=user, target_type=ContentType.objects.get_for_model(target), target_id=target.pk))


@transaction.atomic
def preference_update(*, actor: User, **choices: bool) -> NotificationPreference:
    unknown = set(choices) - set(NotificationPreference.GROUPS)
    if unknown:
        raise ValidationError({name: "Unknown preference." for name in sorted(unknown)})
    preference, _ = NotificationPreference.objects.get_or_create(user=actor)
    for name, value in choices.items():
        setattr(preference, name, bool(value))
    preference.full_clean()
    preference.save()
    audit_record(actor=actor, action="notification.preferences_changed", obj=preference, data=choices)
    return preference


# --- the kinds every case type shares -----------------------------------------------------------

def _case_url(case) -> str:
    from django.urls import reverse

    return reverse("cases:detail", args=[case.reference])


def notify_cases_returned(*, actor, user: User, references: list[str]) -> None:
    """The admins (but the person) hear that a deactivated person's open cases are back in the
    queue (casework.people.services.user_deactivate, through its user_deactivated signal)."""
    from django.urls import reverse

    from casework.people.roles import ADMIN

    admins = (User.objects.filter(is_active=True).exclude(pk=user.pk)
              .filter(Q(is_superuser=True) | Q(groups__name=ADMIN)).distinct())
    shown = ", ".join(references[:20]) + (f" and {len(references) - 20} more" if len(references) > 20 else "")
    for admin in admins:
        notification_send(
            actor=actor, kind=Notification.Kind.CASES_RETURNED, user=admin,
            subject=f"{len(references)} case(s) of {user.get_username()} back in the queue",
            body=f"{user.get_full_name() or user.get_username()} no longer has access; their open cases "
                 f"are unassigned and back in the queue: {shown}.",
            url=reverse("cases:queue"))


def notify_case_assigned(*, case, assignee: User, actor) -> Notification | None:
    """Tell the new assignee, unless they assigned it to themselves."""
    if isinstance(actor, User) and actor.pk == assignee.pk:
        return None
    by = actor.get_full_name() or actor.get_username() if isinstance(actor, User) else "the system"
    return notification_send(
        actor=actor, kind=Notification.Kind.ASSIGNED, case=case, user=assignee,
        subject=f"{case.reference} assigned to you",
        body=f"{by} assigned {case.reference} ({case.title}) to you.", url=_case_url(case))


def notify_run_failed(*, case, run_label: str, error: str) -> Notification | None:
    """Tell the case's assignee that an agent run on it failed (nobody owns it: nobody to tell)."""
    if case.assignee_id is None or case.status in DONE_STATUSES:
        return None
    return notification_send(
        actor="system", kind=Notification.Kind.RUN_FAILED, case=case, user=case.assignee,
        subject=f"{case.reference}: the agents' {run_label} run failed",
        body=f"The {run_label} run on {case.reference} ({case.title}) ended: {error[:300] or 'no detail'}. "
             "Re-run it from the case page, or decide without it.",
        url=_case_url(case))
