from __future__ import annotations

from django.urls import path

from casework.transactions import api

urlpatterns = [
    path("transactions/", api.TransactionImportApi.as_view(), name="api-txn-import"),
    path("transactions/investigations/", api.InvestigationStartApi.as_view(), name="api-txn-start"),
    path("transactions/investigations/<str:reference>/", api.InvestigationDetailApi.as_view(), name="api-txn-detail"),
    path("transactions/investigations/<str:reference>/resume/", api.InvestigationResumeApi.as_view(),
         name="api-txn-resume"),
    path("transactions/investigations/<str:reference>/recommendations/<int:pk>/",
         api.RecommendationDecideApi.as_view(), name="api-txn-recommendation"),
    path("transactions/investigations/<str:reference>/rule/promote/", api.RulePromoteApi.as_view(),
         name="api-txn-rule-promote"),
]
