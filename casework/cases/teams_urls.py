"""Teams and need-to-know, under /people/ (casework.people, a layer below the cases, may not
read cases: these pages live in the case core)."""

from __future__ import annotations

from django.urls import path

from casework.cases import teams_views

app_name = "teams"

urlpatterns = [
    path("teams/", teams_views.teams, name="list"),
    path("<str:username>/access/", teams_views.access, name="person_access"),
]
