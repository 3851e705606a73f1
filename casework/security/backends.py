"""django-axes' lockout, for every sign-in that comes with a request."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend


class LockoutBackend(AxesStandaloneBackend):
    """AxesStandaloneBackend refuses `authenticate()` calls without a request. Every sign-in
    over HTTP (the login page, the admin) passes one; a call without one (a management
    command, the test client's `login`) has no IP to count, so it is left to ModelBackend."""

    def authenticate(self, request=None, *args, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)
