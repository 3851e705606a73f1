from __future__ import annotations

from django.urls import path
from django.views.generic import RedirectView

from casework.fraud import manual_views, views

app_name = "fraud"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="fraud:patterns"), name="index"),
    path("import/", views.alert_import, name="import"),
    path("import/alert/", manual_views.alert_enter_view, name="alert_enter"),
    path("import/template.csv", manual_views.alert_csv_template_view, name="import_template"),
    path("patterns/", views.patterns, name="patterns"),
    path("cases/<str:reference>/assessment/", views.assessment, name="assessment"),
    path("cases/<str:reference>/reassess/", views.reassess, name="reassess"),
    path("cases/<str:reference>/rerun/", views.rerun, name="rerun"),
    path("cases/<str:reference>/capture-retry/", views.capture_retry, name="capture_retry"),
]
