from __future__ import annotations

from django.urls import path

from agents.approvals import views

app_name = "approvals"

urlpatterns = [
    path("approvals/", views.inbox, name="inbox"),
    path("cases/<str:reference>/approvals/", views.panel, name="panel"),
    path("cases/<str:reference>/approvals/<int:pk>/decide/", views.decide, name="decide"),
]
