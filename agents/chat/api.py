"""Conversation API (seed 004's get_history / get_context, send_message, new_conversation) for
the authenticated user on one case."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.chat import selectors, services
from agents.chat.models import ChatMessage
from casework.cases.api import IsInvestigator
from casework.cases.selectors import case_get_for_user

E400 = OpenApiResponse(description="An empty or too long question.")
E404 = OpenApiResponse(description="No such case.")
E409 = OpenApiResponse(description="The agent is still answering the previous question (code: answering).")


class ChatMessageSerializer(serializers.ModelSerializer):
    class Meta:
        model = ChatMessage
        ref_name = "ConversationMessage"
        fields = ["id", "role", "content", "status", "provider", "model", "input_tokens", "output_tokens",
                  "window_tokens", "budget_tokens", "context_events", "tool_calls", "error", "trace_id", "latency_ms",
                  "created_at"]


class ConversationSerializer(serializers.Serializer):
    conversation = serializers.IntegerField(allow_null=True)
    message_count = serializers.IntegerField()
    window_tokens = serializers.IntegerField()
    budget_tokens = serializers.IntegerField()
    provider = serializers.CharField()
    model = serializers.CharField()
    tool_calls = serializers.IntegerField()
    context_events = serializers.ListField(child=serializers.DictField())
    messages = ChatMessageSerializer(many=True)

    class Meta:
        ref_name = "Conversation"


def _conversation(user, case) -> dict:
    conversation = selectors.conversation_current(user=user, case=case)
    history = selectors.conversation_history(conversation)
    info = selectors.conversation_info(conversation, history)
    return {**info, "conversation": conversation.pk if conversation else None, "messages": history}


class ConversationApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="conversation_get", responses={200: ConversationSerializer, 404: E404})
    def get(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        return Response(ConversationSerializer(_conversation(request.user, case)).data)


class ConversationMessageApi(APIView):
    permission_classes = [IsInvestigator]

    class InputSerializer(serializers.Serializer):
        content = serializers.CharField(max_length=services.QUESTION_MAX)

        class Meta:
            ref_name = "ConversationQuestion"

    @extend_schema(operation_id="conversation_ask", request=InputSerializer,
                   responses={201: ChatMessageSerializer, 400: E400, 404: E404, 409: E409})
    def post(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        answer = services.message_send(actor=request.user, case=case, content=data.validated_data["content"])
        return Response(ChatMessageSerializer(answer).data, status=status.HTTP_201_CREATED)


class ConversationNewApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="conversation_new", request=None, responses={201: ConversationSerializer, 404: E404})
    def post(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        services.conversation_start(actor=request.user, case=case)
        return Response(ConversationSerializer(_conversation(request.user, case)).data, status=status.HTTP_201_CREATED)
