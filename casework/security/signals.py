"""Sign-ins, sign-outs, failed sign-ins, lockouts and every Django admin change, audited.

The admin writes a LogEntry for each addition, change and deletion it makes; one receiver
turns each into an audit entry, so that no ModelAdmin has to remember to."""

from __future__ import annotations

from axes.signals import user_locked_out
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db.models.signals import post_save
from django.dispatch import receiver

from audit.services import audit_record
from casework.security.sessions import user_session_forget, user_session_note

ADMIN_ACTIONS = {ADDITION: "admin.added", CHANGE: "admin.changed", DELETION: "admin.deleted"}


def _client(request) -> dict:
    if request is None:
        return {}
    return {"ip": request.META.get("REMOTE_ADDR", ""), "path": request.path[:200]}


@receiver(user_logged_in, dispatch_uid="security.audit_login")
def audit_login(sender, request, user, **kwargs):
    backend = getattr(user, "backend", "") or ""
    method = "oidc" if backend.endswith("OIDCBackend") else "password" if backend else ""
    audit_record(actor=user, action="auth.login", obj=user, data={**_client(request), "method": method})
    if request is not None and hasattr(request, "session"):
        user_session_note(user=user, session_key=request.session.session_key)


@receiver(user_logged_out, dispatch_uid="security.audit_logout")
def audit_logout(sender, request, user, **kwargs):
    if user is not None:
        audit_record(actor=user, action="auth.logout", obj=user, data=_client(request))
    if request is not None and hasattr(request, "session"):
        user_session_forget(session_key=request.session.session_key)


@receiver(user_login_failed, dispatch_uid="security.audit_login_failed")
def audit_login_failed(sender, credentials, request=None, **kwargs):
    # Django has already replaced the password in `credentials` with stars; keep only the name.
    audit_record(actor="system", action="auth.login_failed",
                 data={"username": str(credentials.get("username", ""))[:150], **_client(request)})


@receiver(user_locked_out, dispatch_uid="security.audit_lockout")
def audit_lockout(sender, request, username, ip_address, **kwargs):
    audit_record(actor="system", action="auth.locked_out",
                 data={"username": str(username or "")[:150], "ip": ip_address or "", **_client(request)})


@receiver(post_save, sender=LogEntry, dispatch_uid="security.audit_admin_change")
def audit_admin_change(sender, instance: LogEntry, created: bool, **kwargs):
    if not created:
        return
    audit_record(actor=instance.user, action=ADMIN_ACTIONS.get(instance.action_flag, "admin.logged"), data={
        "model": instance.content_type.model if instance.content_type_id else "",
        "app": instance.content_type.app_label if instance.content_type_id else "",
        "object_id": instance.object_id or "",
        "object": instance.object_repr,
        "change": instance.get_change_message(),
    })
