from __future__ import annotations

from django.urls import path

from agents.approvals import api

urlpatterns = [
    path("approvals/", api.ApprovalListApi.as_view(), name="api-approvals"),
    path("approvals/<int:pk>/approve/", api.ApprovalApproveApi.as_view(), name="api-approval-approve"),
    path("approvals/<int:pk>/deny/", api.ApprovalDenyApi.as_view(), name="api-approval-deny"),
]
