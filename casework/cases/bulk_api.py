"""Bulk actions through the API: the queue's bulk bar without the confirmation step."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.cases.api import IsInvestigator
from casework.cases.bulk import ACTIONS, BULK_MAX, cases_bulk_apply
from casework.cases.filters import assignee_resolve
from casework.cases.models import Case


class CaseBulkApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseBulkInput")
    class InputSerializer(serializers.Serializer):
        references = serializers.ListField(child=serializers.CharField(max_length=20), min_length=1,
                                           max_length=BULK_MAX)
        action = serializers.ChoiceField(choices=list(ACTIONS))
        assignee = serializers.CharField(required=False, allow_null=True, default="me",
                                         help_text="assign: an investigator's username, `me`, or null to unassign.")
        # No default for priority and outcome: "" is neither a priority nor an outcome, and a schema
        # whose default its own enum refuses makes client generators drop the operation.
        priority = serializers.ChoiceField(choices=Case.Priority.values, required=False,
                                           help_text="priority: the priority every case gets.")
        outcome = serializers.CharField(required=False, help_text="close: one outcome for every case.")
        reason = serializers.CharField(required=False, default="", allow_blank=True, max_length=5_000)

        def validate_assignee(self, value):
            try:
                return assignee_resolve(value, user=self.context["request"].user)
            except DjangoValidationError as exc:
                raise serializers.ValidationError(exc.messages) from None

    @extend_schema_serializer(component_name="CaseBulkResult")
    class OutputSerializer(serializers.Serializer):
        action = serializers.CharField()
        done = serializers.ListField(child=serializers.CharField(), help_text="References acted on.")
        skipped = serializers.SerializerMethodField(help_text="Each case left alone, with the reason.")

        def get_skipped(self, result) -> list[dict]:
            return [{"reference": ref, "reason": why} for ref, why in result.skipped]

    @extend_schema(
        operation_id="cases_bulk", request=InputSerializer,
        responses={200: OutputSerializer, 400: OpenApiResponse(description="A missing or invalid field, named.")},
        description="Apply one action to many cases, each through the single action's service (audited per "
                    "case). A case that cannot take it is skipped and named with the reason; the rest go ahead.",
        examples=[OpenApiExample("Dismiss false positives", request_only=True, value={
            "references": ["FRA-000101", "FRA-000102"], "action": "close", "outcome": "false_positive",
            "reason": "Payroll batch flagged by the new rule."})],
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data, context={"request": request})
        data.is_valid(raise_exception=True)
        values = data.validated_data
        result = cases_bulk_apply(actor=request.user, references=values["references"], action=values["action"],
                                  assignee=values["assignee"] if values["action"] == "assign" else None,
                                  priority=values.get("priority", ""), outcome=values.get("outcome", ""),
                                  reason=values["reason"])
        return Response(self.OutputSerializer(result).data)
