from __future__ import annotations

from django.urls import path

from agents.chat import views

app_name = "chat"

urlpatterns = [
    path("<str:reference>/ask/", views.panel, name="panel"),
    path("<str:reference>/ask/send/", views.send, name="send"),
    path("<str:reference>/ask/new/", views.new, name="new"),
    path("<str:reference>/ask/message/<int:message_id>/", views.message, name="message"),
    path("<str:reference>/ask/trace/<str:trace_id>/", views.trace, name="trace"),
]
