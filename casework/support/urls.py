from __future__ import annotations

from django.urls import path

from casework.support import inbound_views, views

app_name = "support"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("messages/new/", views.message_new, name="message_new"),
    path("auto-sent/", views.auto_sent, name="auto_sent"),
    path("kb/<str:article_id>/", views.kb_article, name="kb_article"),
    path("tickets/<str:ticket_id>/triage/", views.triage, name="triage"),
    path("tickets/<str:ticket_id>/reply/", views.reply, name="reply"),
    path("inbound/<str:provider>/", inbound_views.inbound_email, name="inbound_email"),
    path("tickets/<str:ticket_id>/resend/", views.resend, name="resend"),
    path("tickets/<str:ticket_id>/escalate/", views.escalate, name="escalate"),
    path("tickets/<str:ticket_id>/close/", views.close, name="close"),
]
