from __future__ import annotations

from django.urls import path

from casework.support import api

urlpatterns = [
    path("support/messages/", api.MessageReceiveApi.as_view(), name="api-support-message"),
    path("support/intake/<int:run_id>/", api.IntakeDetailApi.as_view(), name="api-support-intake"),
    path("support/tickets/<str:ticket_id>/", api.TicketDetailApi.as_view(), name="api-support-ticket"),
    path("support/tickets/<str:ticket_id>/reply/", api.TicketReplyApi.as_view(), name="api-support-reply"),
    path("support/tickets/<str:ticket_id>/escalate/", api.TicketEscalateApi.as_view(), name="api-support-escalate"),
    path("support/tickets/<str:ticket_id>/close/", api.TicketCloseApi.as_view(), name="api-support-close"),
]
