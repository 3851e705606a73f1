from __future__ import annotations

from django.urls import path

from casework.budgets import api

urlpatterns = [
    path("cases/<str:reference>/budget/", api.CaseBudgetApi.as_view(), name="api-case-budget"),
    path("cases/<str:reference>/budget/stop/", api.CaseBudgetStopApi.as_view(), name="api-case-budget-stop"),
]
