from __future__ import annotations

from django.urls import path

from casework.people import oidc, views

app_name = "people"

urlpatterns = [
    path("no-role/", views.no_role, name="no_role"),
]

auth_urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    # Sign-in through the organisation's identity provider (404 unless OIDC_* is configured).
    path("oidc/authenticate/", oidc.OIDCStartView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", oidc.OIDCCallbackView.as_view(), name="oidc_authentication_callback"),
]
