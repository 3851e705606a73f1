from __future__ import annotations

from django.urls import path

from casework.privacy import api

urlpatterns = [
    path("legal-holds/", api.LegalHoldPlaceApi.as_view(), name="api-legal-hold-place"),
    path("legal-holds/<int:pk>/lift/", api.LegalHoldLiftApi.as_view(), name="api-legal-hold-lift"),
    path("entities/<int:pk>/subject-access/", api.SubjectAccessApi.as_view(), name="api-entity-subject-access"),
    path("erasure-requests/", api.ErasureRequestApi.as_view(), name="api-erasure-request"),
    path("erasure-requests/<int:pk>/", api.ErasureRequestDetailApi.as_view(), name="api-erasure-request-detail"),
    path("erasure-requests/<int:pk>/approve/", api.ErasureRequestApproveApi.as_view(),
         name="api-erasure-request-approve"),
    path("erasure-requests/<int:pk>/resume/", api.ErasureRequestResumeApi.as_view(),
         name="api-erasure-request-resume"),
]
