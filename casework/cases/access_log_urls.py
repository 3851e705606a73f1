from __future__ import annotations

from django.urls import path

from casework.cases import access_log_views

app_name = "access_log"

urlpatterns = [
    path("cases/<str:reference>/who-looked/", access_log_views.who_looked, name="who_looked"),
    path("audit/access.csv", access_log_views.export, name="export"),
]
