from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from casework.people import views

app_name = "people"

urlpatterns = [
    path("no-role/", views.no_role, name="no_role"),
]

auth_urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
