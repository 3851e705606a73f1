from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.shortcuts import redirect
from django.utils.decorators import method_decorator

from casework.people.roles import is_investigator, is_manager


@method_decorator(login_not_required, name="dispatch")
class LoginView(auth_views.LoginView):
    template_name = "people/login.html"
    redirect_authenticated_user = True


def home(request):
    """Send each person to where their work is."""
    if is_investigator(request.user):
        return redirect("cases:queue")
    if is_manager(request.user) and _has_route("access:inbox"):
        return redirect("access:inbox")
    if request.user.is_staff:
        return redirect("admin:index")
    return redirect("people:no_role")


def no_role(request):
    from django.shortcuts import render

    return render(request, "people/no_role.html")


def _has_route(name: str) -> bool:
    from django.urls import NoReverseMatch, reverse

    try:
        reverse(name)
    except NoReverseMatch:
        return False
    return True
