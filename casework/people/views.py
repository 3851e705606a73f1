from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.shortcuts import redirect
from django.utils.decorators import method_decorator


@method_decorator(login_not_required, name="dispatch")
class LoginView(auth_views.LoginView):
    template_name = "people/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        from django.conf import settings

        from casework.people.oidc import oidc_enabled

        return {**super().get_context_data(**kwargs), "oidc_enabled": oidc_enabled(),
                "oidc_provider_name": settings.OIDC_PROVIDER_NAME,
                "local_login_limited": bool(settings.LOCAL_LOGIN_USERS),
                # A right password for an account that signs in through single sign-on only
                # (casework.security.backends.LocalPasswordBackend); never set for a wrong one.
                "use_sso": getattr(self.request, "local_login_use_sso", False)}


class LogoutView(auth_views.LogoutView):
    """Signs out of Casework and, for a sign-in through the identity provider that offers
    RP-initiated logout, out of the provider too (casework.people.oidc.provider_logout_url)."""

    def post(self, request, *args, **kwargs):
        from casework.people.oidc import provider_logout_url

        target = provider_logout_url(request)
        response = super().post(request, *args, **kwargs)
        return redirect(target) if target.startswith("http") else response


def no_role(request):
    from django.shortcuts import render

    return render(request, "people/no_role.html")

