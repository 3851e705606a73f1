from __future__ import annotations

from django.urls import path

from agents.evals import views

app_name = "evals"

urlpatterns = [
    path("", views.index, name="index"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/scenarios/<str:scenario_id>/trace/<str:trace_id>/", views.scenario_trace,
         name="scenario_trace"),
    path("runs/<int:pk>/scenarios/<str:scenario_id>/diff/", views.scenario_diff_view, name="scenario_diff"),
    path("add/<str:reference>/", views.add_to_suite, name="add"),
    path("scenarios/", views.stored_list, name="stored"),
    path("scenarios/<int:pk>/review/", views.stored_review, name="stored_review"),
]
