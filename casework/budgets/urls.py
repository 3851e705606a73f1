from __future__ import annotations

from django.urls import path

from casework.budgets import views

app_name = "budgets"

urlpatterns = [
    path("<str:reference>/budget/", views.budget_change, name="case_budget"),
]
