from __future__ import annotations

from django.urls import path

from casework.cases.saved_views import api

urlpatterns = [
    path("saved-views/", api.SavedViewListApi.as_view(), name="api-saved-view-list"),
    path("saved-views/<int:pk>/", api.SavedViewDetailApi.as_view(), name="api-saved-view-detail"),
]
