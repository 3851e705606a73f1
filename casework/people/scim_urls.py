"""SCIM 2.0 provisioning for the identity provider: /scim/v2/ (casework/people/scim.py)."""

from __future__ import annotations

from django.urls import path

from casework.people import scim

app_name = "scim"

urlpatterns = [
    path("Users", scim.UsersView.as_view(), name="users"),
    path("Users/<int:pk>", scim.UserView.as_view(), name="user"),
    path("Groups", scim.GroupsView.as_view(), name="groups"),
    path("Groups/<int:pk>", scim.GroupView.as_view(), name="group"),
    path("ServiceProviderConfig", scim.ServiceProviderConfigView.as_view(), name="service_provider_config"),
]
