from __future__ import annotations

from django.urls import path

from casework.entities import api

urlpatterns = [
    path("entities/<int:pk>/", api.EntityDetailApi.as_view(), name="api-entity-detail"),
    path("cases/<str:reference>/related/", api.CaseRelatedApi.as_view(), name="api-case-related"),
    path("cases/<str:reference>/links/", api.CaseLinkApi.as_view(), name="api-case-link"),
    path("cases/<str:reference>/merge/", api.CaseMergeApi.as_view(), name="api-case-merge"),
]
