from __future__ import annotations

from django.urls import path
from django.views.generic import RedirectView

from casework.fraud import views

app_name = "fraud"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="fraud:patterns"), name="index"),
    path("import/", views.alert_import, name="import"),
    path("patterns/", views.patterns, name="patterns"),
    path("cases/<str:reference>/assessment/", views.assessment, name="assessment"),
    path("cases/<str:reference>/reassess/", views.reassess, name="reassess"),
    path("cases/<str:reference>/rerun/", views.rerun, name="rerun"),
]
