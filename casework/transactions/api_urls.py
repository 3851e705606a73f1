from __future__ import annotations

from django.urls import path

from casework.transactions import api
from casework.transactions.decisions import api as decisions
from casework.transactions.lists import api as lists
from casework.transactions.monitoring import api as monitoring

urlpatterns = [
    path("transactions/rules/", monitoring.RuleListApi.as_view(), name="api-txn-rules"),
    path("transactions/rules/<int:pk>/versions/", monitoring.RuleVersionProposeApi.as_view(),
         name="api-txn-rule-versions"),
    path("transactions/rules/<int:pk>/versions/<int:number>/<str:action>/", monitoring.RuleVersionActApi.as_view(),
         name="api-txn-rule-version-act"),
    path("transactions/rates/", monitoring.RateApi.as_view(), name="api-txn-rates"),
    path("transactions/", api.TransactionImportApi.as_view(), name="api-txn-import"),
    path("transactions/decide", decisions.DecideApi.as_view(), name="api-txn-decide"),
    path("transactions/decisions/<str:decision_id>", decisions.DecisionDetailApi.as_view(),
         name="api-txn-decision"),
    path("transaction-lists/", lists.ValueListApi.as_view(), name="api-txn-lists"),
    path("transaction-lists/<slug:name>/entries/", lists.ListEntriesApi.as_view(), name="api-txn-list-entries"),
    path("transaction-lists/<slug:name>/entries/remove/", lists.ListEntryRemoveApi.as_view(),
         name="api-txn-list-entry-remove"),
    path("transactions/investigations/", api.InvestigationStartApi.as_view(), name="api-txn-start"),
    path("transactions/investigations/<str:reference>/", api.InvestigationDetailApi.as_view(), name="api-txn-detail"),
    path("transactions/investigations/<str:reference>/resume/", api.InvestigationResumeApi.as_view(),
         name="api-txn-resume"),
    path("transactions/investigations/<str:reference>/recommendations/<int:pk>/",
         api.RecommendationDecideApi.as_view(), name="api-txn-recommendation"),
    path("transactions/investigations/<str:reference>/rule/promote/", api.RulePromoteApi.as_view(),
         name="api-txn-rule-promote"),
]
