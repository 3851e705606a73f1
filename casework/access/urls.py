"""/access/: the employee's answer link, the manager's inbox, and the
investigator's access pages (the case page itself is /cases/<reference>/)."""

from __future__ import annotations

from django.urls import path

from casework.access import views

app_name = "access"

urlpatterns = [
    path("respond/<str:token>/", views.respond, name="respond"),
    path("inbox/", views.inbox, name="inbox"),
    path("inbox/<int:pk>/", views.inbox_detail, name="inbox_detail"),
    path("new/", views.mutation_new, name="mutation_new"),
    path("cases/<str:reference>/tabs/<str:tab>/", views.case_tab, name="case_tab"),
    path("cases/<str:reference>/decide/", views.decide, name="decide"),
    path("cases/<str:reference>/requests/<int:pk>/resend/", views.resend, name="resend"),
]
