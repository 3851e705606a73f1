from __future__ import annotations

from django.urls import path

from casework.transactions import views
from casework.transactions.monitoring import views as monitoring

app_name = "transactions"

urlpatterns = [
    path("", views.index, name="index"),
    path("rules/", monitoring.rules, name="rules"),
    path("rules/new/", monitoring.rule_new, name="rule_new"),
    path("rules/<int:pk>/versions/", monitoring.version_propose, name="rule_version_propose"),
    path("rules/<int:pk>/versions/<int:number>/<str:action>/", monitoring.version_act, name="rule_version_act"),
    path("rules/<int:pk>/disable/", monitoring.rule_disable, name="rule_disable"),
    path("cases/<str:reference>/progress/", views.progress, name="progress"),
    path("cases/<str:reference>/resume/", views.resume, name="resume"),
    path("cases/<str:reference>/recommendations/<int:pk>/", views.recommendation, name="recommendation"),
    path("cases/<str:reference>/rule/", views.rule_edit, name="rule_edit"),
    path("cases/<str:reference>/rule/promote/", views.rule_promote, name="rule_promote"),
]
