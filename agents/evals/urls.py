from __future__ import annotations

from django.urls import path

from agents.evals import views

app_name = "evals"

urlpatterns = [
    path("", views.index, name="index"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("add/<str:reference>/", views.add_to_suite, name="add"),
]
