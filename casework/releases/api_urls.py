from __future__ import annotations

from django.urls import path

from casework.releases import api

urlpatterns = [
    path("releases/", api.ReleaseSubmitApi.as_view(), name="api-release-submit"),
    path("releases/<str:release_id>/", api.ReleaseDetailApi.as_view(), name="api-release-detail"),
    path("releases/<str:release_id>/decision/", api.ReleaseDecisionApi.as_view(), name="api-release-decide"),
]
