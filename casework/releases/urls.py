from __future__ import annotations

from django.urls import path

from casework.releases import views

app_name = "releases"

urlpatterns = [
    path("", views.index, name="index"),
    path("<str:release_id>/overview/", views.overview, name="overview"),
    path("<str:release_id>/decide/", views.decide, name="decide"),
    path("<str:release_id>/reassess/", views.reassess, name="reassess"),
]
