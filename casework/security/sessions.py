"""The sessions each person is signed in with, so that they can all be ended at once."""

from __future__ import annotations

from importlib import import_module

from django.conf import settings

from casework.security.models import UserSession


def _store(session_key: str | None = None):
    return import_module(settings.SESSION_ENGINE).SessionStore(session_key)


def user_session_note(*, user, session_key: str | None) -> None:
    if session_key:
        UserSession.objects.update_or_create(session_key=session_key, defaults={"user": user})


def user_session_forget(*, session_key: str | None) -> None:
    if session_key:
        UserSession.objects.filter(session_key=session_key).delete()


def user_sessions_end(user) -> int:
    """Delete every session `user` signed in with from the session store; returns how many."""
    keys = list(UserSession.objects.filter(user=user).values_list("session_key", flat=True))
    store = _store()
    for key in keys:
        store.delete(key)
    UserSession.objects.filter(session_key__in=keys).delete()
    return len(keys)
