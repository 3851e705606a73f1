"""/people/teams/ (admins): every team, its case types, groups and people.
/people/<username>/access/ (admins, and each person for themselves): what this person can
see, and why."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from casework.cases.teams_selectors import person_access, teams_with_members
from casework.cases.visibility import sees_every_case


@require_GET
def teams(request):
    if not sees_every_case(request.user):
        raise PermissionDenied("Only admins see every team.")
    return render(request, "cases/teams.html", {"teams": teams_with_members()})


@require_GET
def access(request, username: str):
    if not (sees_every_case(request.user) or request.user.get_username() == username):
        raise PermissionDenied("Only admins see what another person may see.")
    person = get_object_or_404(User, username=username)
    return render(request, "cases/person_access.html", {"access": person_access(person)})
