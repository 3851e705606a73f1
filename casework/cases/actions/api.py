"""The actions' signed confirmation callback (no account: the signature authenticates)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.outbox.models import Action


class ActionOutputSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="event_id", help_text="The action event's id.")
    kind = serializers.CharField(source="label")
    case = serializers.CharField(source="case.reference")
    requested_by = serializers.CharField(source="requested_by.username", default=None, allow_null=True)
    resolved_by = serializers.CharField(source="resolved_by_name", help_text="Who confirmed it, or said it failed.")

    class Meta:
        model = Action
        fields = ["id", "type", "kind", "case", "state", "requested_by", "requested_at", "deadline_at",
                  "delivered_at", "delivered_to", "resolved_at", "resolved_by", "external_reference",
                  "failure_reason"]


class ActionConfirmationInputSerializer(serializers.Serializer):
    """Documents the body; the service reads the raw bytes (they are what the signature covers)."""

    status = serializers.ChoiceField(choices=["confirmed", "failed"])
    reason = serializers.CharField(required=False, max_length=500, help_text="Required when `failed`.")
    reference = serializers.CharField(required=False, max_length=200,
                                      help_text="Your id for what you did (a block id, a ticket).")


class ActionConfirmationApi(APIView):
    """Signed, not logged in: the system that carried out an action says so. No session, so no
    CSRF; the Standard Webhooks signature (the endpoint's `whsec_` secret) is the credential."""

    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="actions_confirm", request=ActionConfirmationInputSerializer, auth=[],
        responses={200: ActionOutputSerializer,
                   400: OpenApiResponse(description="A missing or invalid field, named."),
                   401: OpenApiResponse(description="Unsigned, or a signature no secret of the action's endpoints "
                                                    "verifies (or its timestamp is more than 5 minutes off)."),
                   404: OpenApiResponse(description="No action has this event id (said only to a caller whose "
                                                    "signature an endpoint's secret verifies; anyone else gets the 401)."),
                   409: OpenApiResponse(description="The action was confirmed already (a failure after it).")},
        examples=[OpenApiExample("Done", request_only=True, value={"status": "confirmed", "reference": "BLK-88121"}),
                  OpenApiExample("Could not", request_only=True,
                                 value={"status": "failed", "reason": "Card already closed by the customer."})],
    )
    def post(self, request, id: str):  # noqa: A002 - the route's name for the event id
        from casework.cases.actions.services import action_callback

        action = action_callback(event_id=id, body=request.body, headers=request.headers)
        action = Action.objects.select_related("case", "requested_by").get(pk=action.pk)
        return Response(ActionOutputSerializer(action).data)
