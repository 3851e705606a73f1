from __future__ import annotations

from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequired


class LoginRequiredMiddleware(DjangoLoginRequired):
    """Django's login-required middleware, except for the API.

    The API authenticates on its own (session or token) and answers 401 in JSON rather
    than redirecting to the login page. Views open to anonymous users (login, health,
    metrics, signed links) are marked with `django.contrib.auth.decorators.login_not_required`.
    """

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
