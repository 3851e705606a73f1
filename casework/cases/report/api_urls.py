from __future__ import annotations

from django.urls import path

from casework.cases.report import views

urlpatterns = [
    path("cases/<str:reference>/report/", views.CaseReportApi.as_view(), name="api-case-report"),
]
