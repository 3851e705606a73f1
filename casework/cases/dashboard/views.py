"""The dashboard at / (`home` routes here by role): the figures of the cases the person may see
(casework.cases.visibility: their teams' types; an admin every case, a manager or an
investigator in no team zeros) for investigators, managers and admins, and a manager's open
validation requests."""

from __future__ import annotations

from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from casework.budgets.selectors import dashboard_budgets
from casework.cases.dashboard import charts, selectors
from casework.people.roles import is_investigator, is_manager


@require_GET
def dashboard(request):
    user = request.user
    # Whose figures is the rule's question, not the role's: everyone `home` sends here sees the
    # cases they may see (zeros for someone in no team).
    figures = selectors.dashboard_figures(user=user)
    data = charts.chart_data(figures)
    context = {"manager": is_manager(user), "figures": figures, "chart_data": data,
               "charts": charts.chart_tables(data), "team_panels": selectors.panels_for(user, audience="team"),
               "budgets": dashboard_budgets(user)}
    if context["manager"]:
        context["panels"] = selectors.manager_panels(user)
    return render(request, "dashboard/dashboard.html", context)


def home(request):
    """/ by role: investigators and admins see the team's figures, managers their open
    validation requests; anyone else is asked to get a role (casework/people)."""
    if is_investigator(request.user) or is_manager(request.user) or request.user.is_staff:
        return dashboard(request)
    return redirect("people:no_role")
