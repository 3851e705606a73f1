from __future__ import annotations

from django.urls import path

from casework.cases.lifecycle import views

app_name = "lifecycles"

urlpatterns = [
    path("", views.index, name="index"),
]
