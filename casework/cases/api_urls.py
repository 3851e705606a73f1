from __future__ import annotations

from django.urls import path

from casework.cases import api, bulk_api, restriction_api

urlpatterns = [
    path("cases/", api.CaseListApi.as_view(), name="api-case-list"),
    path("cases/bulk/", bulk_api.CaseBulkApi.as_view(), name="api-case-bulk"),
    path("cases/<str:reference>/", api.CaseDetailApi.as_view(), name="api-case-detail"),
    path("cases/<str:reference>/assign/", api.CaseAssignApi.as_view(), name="api-case-assign"),
    path("cases/<str:reference>/comments/", api.CaseCommentApi.as_view(), name="api-case-comment"),
    path("cases/<str:reference>/close/", api.CaseCloseApi.as_view(), name="api-case-close"),
    path("cases/<str:reference>/restriction/", restriction_api.CaseRestrictionApi.as_view(), name="api-case-restriction"),
]
