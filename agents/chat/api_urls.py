from __future__ import annotations

from django.urls import path

from agents.chat import api

urlpatterns = [
    path("cases/<str:reference>/conversation/", api.ConversationApi.as_view(), name="api-conversation"),
    path("cases/<str:reference>/conversation/messages/", api.ConversationMessageApi.as_view(),
         name="api-conversation-ask"),
    path("cases/<str:reference>/conversation/new/", api.ConversationNewApi.as_view(), name="api-conversation-new"),
]
