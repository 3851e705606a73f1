from __future__ import annotations

from django.urls import path

from casework.transactions import views

app_name = "transactions"

urlpatterns = [
    path("", views.index, name="index"),
    path("rules/", views.rules, name="rules"),
    path("cases/<str:reference>/progress/", views.progress, name="progress"),
    path("cases/<str:reference>/resume/", views.resume, name="resume"),
    path("cases/<str:reference>/recommendations/<int:pk>/", views.recommendation, name="recommendation"),
    path("cases/<str:reference>/rule/", views.rule_edit, name="rule_edit"),
    path("cases/<str:reference>/rule/promote/", views.rule_promote, name="rule_promote"),
]
