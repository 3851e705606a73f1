from __future__ import annotations

from django.urls import path

from casework.cases.notifications import views

app_name = "notifications"

urlpatterns = [
    path("", views.inbox, name="inbox"),
    path("read-all/", views.read_all, name="read_all"),
    path("settings/", views.preferences, name="preferences"),
    path("<int:pk>/", views.notification_open, name="open"),
]
