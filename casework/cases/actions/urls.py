from __future__ import annotations

from django.urls import path

from casework.cases.actions import views

app_name = "case_actions"

urlpatterns = [
    path("<str:reference>/actions/", views.case_actions, name="case_actions"),
    path("<str:reference>/actions/resolve/", views.action_resolve_view, name="action_resolve"),
]
