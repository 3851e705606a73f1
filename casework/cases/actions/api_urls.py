from __future__ import annotations

from django.urls import path

from casework.cases.actions import api

urlpatterns = [
    path("actions/<str:id>/confirmation", api.ActionConfirmationApi.as_view(), name="api-action-confirmation"),
]
