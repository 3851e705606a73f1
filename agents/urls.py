from __future__ import annotations

from django.urls import path

from agents import views

app_name = "agents"

urlpatterns = [
    path("<str:reference>/runs/", views.run_panel, name="run_panel"),
    path("<str:reference>/runs/<int:run_id>/trace/", views.run_trace, name="run_trace"),
    path("<str:reference>/runs/<int:run_id>/rerun/", views.rerun, name="rerun"),
]
