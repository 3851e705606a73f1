"""django-axes' lockout, for every sign-in that comes with a request; local passwords, for whom they are allowed."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend


class LockoutBackend(AxesStandaloneBackend):
    """AxesStandaloneBackend refuses `authenticate()` calls without a request. Every sign-in
    over HTTP (the login page, the admin) passes one; a call without one (a management
    command, the test client's `login`) has no IP to count, so it is left to ModelBackend."""

    def authenticate(self, request=None, *args, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)


class LocalPasswordBackend(ModelBackend):
    """Username and password, as Django's ModelBackend, for the people in LOCAL_LOGIN_USERS
    only when that is set: once everyone signs in through the identity provider, local
    passwords are left to the break-glass admins. A refused name is audited; Django then
    reports the sign-in as failed (and django-axes counts it) as for a wrong password.

    The password is still checked: when it is right, the request is marked
    (`local_login_use_sso`) and the login page points the person to single sign-on. A wrong
    password gets no mark, so whoever guesses learns nothing about which accounts exist."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        allowed = settings.LOCAL_LOGIN_USERS
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if allowed and username is not None and username not in allowed:
            from audit.services import audit_record

            right = super().authenticate(request, username=username, password=password, **kwargs) is not None
            if right and request is not None:
                request.local_login_use_sso = True
            audit_record(actor="system", action="auth.local_login_refused", data={
                "username": str(username)[:150], "reason": "not in LOCAL_LOGIN_USERS", "password_right": right,
                "ip": request.META.get("REMOTE_ADDR", "") if request is not None else ""})
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
