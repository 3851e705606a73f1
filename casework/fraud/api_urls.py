from __future__ import annotations

from django.urls import path

from casework.fraud import api

urlpatterns = [
    path("fraud/alerts/", api.AlertCreateApi.as_view(), name="api-fraud-alert-create"),
    path("fraud/alerts/<str:reference>/", api.AlertDetailApi.as_view(), name="api-fraud-alert-detail"),
    path("fraud/alerts/<str:reference>/reassess/", api.AlertReassessApi.as_view(), name="api-fraud-alert-reassess"),
    path("fraud/alerts/<str:reference>/rerun/", api.AlertRerunApi.as_view(), name="api-fraud-alert-rerun"),
    path("fraud/alerts/<str:reference>/capture-retry/", api.AlertCaptureRetryApi.as_view(),
         name="api-fraud-alert-capture-retry"),
    path("fraud/alerts/<str:reference>/close/", api.AlertCloseApi.as_view(), name="api-fraud-alert-close"),
]
