from __future__ import annotations

from django.urls import path

from casework.cases.report import views

app_name = "case_report"

urlpatterns = [
    path("<str:reference>/report.pdf", views.download, name="download"),
]
