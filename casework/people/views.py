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
    """The dashboard (casework/cases/dashboard) by role: investigators and admins see the
    team's figures, managers their open validation requests; anyone else is asked to get a role."""
    if is_investigator(request.user) or is_manager(request.user) or request.user.is_staff:
        from casework.cases.dashboard.views import dashboard

        return dashboard(request)
    return redirect("people:no_role")


def no_role(request):
    from django.shortcuts import render

    return render(request, "people/no_role.html")

