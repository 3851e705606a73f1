"""Webhook endpoints API (admins only): endpoints, their secret (shown once), delivery log, replay.
(The actions' signed confirmation callback is casework/cases/actions/api.py.)"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.case_type_source import case_types_known
from casework.outbox import services
from casework.outbox.catalogue import EVENT_TYPES
from casework.outbox.models import Delivery, DeliveryAttempt, Endpoint
from casework.people.models import Team
from casework.people.roles import ADMIN, has_role


class IsAdmin(BasePermission):
    message = "Only admins manage webhook endpoints."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and has_role(request.user, ADMIN))


def _case_type_choices():
    return list(case_types_known())


class EndpointOutputSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", default=None, allow_null=True)
    team = serializers.CharField(source="team.name", default=None, allow_null=True,
                                 help_text="The team whose system this is (only its case types' events); null: admin-owned.")
    event_types = serializers.ListField(child=serializers.CharField())
    case_types = serializers.ListField(child=serializers.CharField())
    rotating_until = serializers.DateTimeField(source="previous_secret_expires_at", allow_null=True,
                                               help_text="Until then the previous secret signs too.")
    breaker = serializers.SerializerMethodField(
        help_text="The circuit breaker: closed; open (paused until paused_until); half-open (the next "
                  "delivery goes alone, as a probe); probing (that probe is in flight).")

    class Meta:
        model = Endpoint
        fields = ["id", "url", "description", "enabled", "disabled_reason", "event_types", "case_types",
                  "timeout_seconds", "owner", "team", "consecutive_failures", "breaker", "paused_until", "rotating_until",
                  "created_at", "updated_at"]

    @extend_schema_field(serializers.ChoiceField(choices=["closed", "open", "half-open", "probing"]))
    def get_breaker(self, endpoint: Endpoint) -> str:
        from django.utils import timezone

        return endpoint.breaker_state(timezone.now())


class EndpointWithSecretSerializer(EndpointOutputSerializer):
    secret = serializers.CharField(help_text="The `whsec_` signing secret. Shown in this answer only: store it now.")

    class Meta(EndpointOutputSerializer.Meta):
        fields = [*EndpointOutputSerializer.Meta.fields, "secret"]


class EndpointInputSerializer(serializers.Serializer):
    url = serializers.URLField(max_length=500, help_text="https; a private or loopback address is refused "
                                                          "unless WEBHOOK_ALLOWED_HOSTS names it.")
    description = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    enabled = serializers.BooleanField(required=False, default=True)
    event_types = serializers.ListField(child=serializers.ChoiceField(choices=[]),
                                        required=False, default=list, help_text="Empty: every event type.")
    case_types = serializers.ListField(child=serializers.ChoiceField(choices=_case_type_choices()),
                                       required=False, default=list, help_text="Empty: every case type.")
    timeout_seconds = serializers.IntegerField(min_value=1, max_value=60, required=False, default=10)
    owner = serializers.SlugRelatedField(slug_field="username", queryset=User.objects.all(), required=False,
                                         allow_null=True, default=None,
                                         help_text="Notified of dead deliveries; default: you.")
    team = serializers.SlugRelatedField(slug_field="slug", queryset=Team.objects.all(), required=False,
                                        allow_null=True, default=None,
                                        help_text="A team's slug: the endpoint receives only events of the case "
                                                  "types that team owns. Null: admin-owned, every subscribed type.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The catalogue as it is now: case types register their events from AppConfig.ready.
        self.fields["event_types"].child.choices = list(EVENT_TYPES)


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = DeliveryAttempt
        fields = ["number", "at", "status", "latency_ms", "error", "response"]


class DeliveryOutputSerializer(serializers.ModelSerializer):
    event_id = serializers.CharField()
    event_type = serializers.CharField(source="event.type")
    case = serializers.CharField(source="event.case.reference", default=None, allow_null=True)
    endpoint = serializers.IntegerField(source="endpoint_id")
    payload = serializers.JSONField(source="event.payload")
    attempt_log = AttemptSerializer(many=True)

    class Meta:
        model = Delivery
        fields = ["id", "event_id", "event_type", "case", "endpoint", "state", "attempts", "next_attempt_at",
                  "last_status", "last_latency_ms", "last_error", "last_response", "delivered_at", "created_at",
                  "payload", "attempt_log"]


class ReplayCountSerializer(serializers.Serializer):
    replayed = serializers.IntegerField()


EXAMPLE = OpenApiExample("A receiver for decisions", request_only=True, value={
    "url": "https://hooks.example.com/casework", "description": "Core banking",
    "event_types": ["case.decided"], "case_types": ["fraud_alert"], "timeout_seconds": 10})


def _endpoint(pk: int) -> Endpoint:
    return get_object_or_404(Endpoint.objects.select_related("owner", "team"), pk=pk)


class EndpointListApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(operation_id="webhook_endpoints_list", responses=EndpointOutputSerializer(many=True))
    def get(self, request):
        endpoints = Endpoint.objects.select_related("owner", "team").order_by("pk")
        return Response(EndpointOutputSerializer(endpoints, many=True).data)

    @extend_schema(operation_id="webhook_endpoints_create", request=EndpointInputSerializer,
                   responses={201: EndpointWithSecretSerializer,
                              400: OpenApiResponse(description="A missing or invalid field, named; an unsafe URL.")},
                   examples=[EXAMPLE])
    def post(self, request):
        data = EndpointInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint, secret = services.endpoint_create(actor=request.user, **data.validated_data)
        endpoint.secret = secret
        return Response(EndpointWithSecretSerializer(endpoint).data, status=status.HTTP_201_CREATED)


class EndpointDetailApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(operation_id="webhook_endpoints_retrieve", responses=EndpointOutputSerializer)
    def get(self, request, pk: int):
        return Response(EndpointOutputSerializer(_endpoint(pk)).data)

    @extend_schema(operation_id="webhook_endpoints_update", request=EndpointInputSerializer(partial=True),
                   responses={200: EndpointOutputSerializer,
                              400: OpenApiResponse(description="An invalid field, named; an unsafe URL.")})
    def patch(self, request, pk: int):
        endpoint = _endpoint(pk)
        data = EndpointInputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        # Only what was sent: a partial serializer still fills the defaults of the fields left out.
        changes = {k: v for k, v in data.validated_data.items() if k in request.data}
        endpoint = services.endpoint_update(actor=request.user, endpoint=endpoint, **changes)
        return Response(EndpointOutputSerializer(endpoint).data)


class EndpointRotateApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(operation_id="webhook_endpoints_rotate_secret", request=None,
                   responses={200: EndpointWithSecretSerializer})
    def post(self, request, pk: int):
        endpoint, secret = services.endpoint_rotate_secret(actor=request.user, endpoint=_endpoint(pk))
        return Response(EndpointWithSecretSerializer(endpoint).data)


class EndpointDeliveriesApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(operation_id="webhook_endpoints_deliveries", responses=DeliveryOutputSerializer(many=True),
                   parameters=[OpenApiParameter("state", enum=Delivery.State.values, required=False)])
    def get(self, request, pk: int):
        """The endpoint's delivery log, newest first (the last 100), each with its attempts."""
        endpoint = _endpoint(pk)
        deliveries = (Delivery.objects.filter(endpoint=endpoint).select_related("event__case")
                      .prefetch_related("attempt_log").order_by("-created_at", "-pk"))
        state = request.query_params.get("state")
        if state:
            deliveries = deliveries.filter(state=state)
        return Response(DeliveryOutputSerializer(deliveries[:100], many=True).data)


class EndpointReplayFailedApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(operation_id="webhook_endpoints_replay_failed", request=None,
                   responses={200: ReplayCountSerializer})
    def post(self, request, pk: int):
        """Send every dead delivery of the endpoint again, under the same event ids."""
        count = services.endpoint_replay_failed(actor=request.user, endpoint=_endpoint(pk))
        return Response({"replayed": count})


class DeliveryReplayApi(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(operation_id="webhook_deliveries_replay", request=None,
                   responses={200: DeliveryOutputSerializer,
                              409: OpenApiResponse(description="The delivery is being sent right now.")})
    def post(self, request, pk: int):
        delivery = get_object_or_404(Delivery.objects.select_related("event", "endpoint"), pk=pk)
        delivery = services.delivery_replay(actor=request.user, delivery=delivery)
        delivery = (Delivery.objects.select_related("event__case").prefetch_related("attempt_log").get(pk=delivery.pk))
        return Response(DeliveryOutputSerializer(delivery).data)
