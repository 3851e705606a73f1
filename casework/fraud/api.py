"""Fraud alerts API: one view per operation, with nested input and output serializers.

Incoming alerts are validated by `schemas.AlertIn` (the same definition the CSV import and
the admin use), and the request schema in OpenAPI is generated from it.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.cases import selectors as case_selectors
from casework.cases.api import IsInvestigator
from casework.fraud import selectors, services
from casework.fraud.models import Alert
from casework.fraud.schemas import AlertIn


def _openapi_30(schema):
    """Pydantic writes JSON Schema 2020-12; OpenAPI 3.0 wants `nullable` and a single `example`."""
    if isinstance(schema, list):
        return [_openapi_30(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: _openapi_30(value) for key, value in schema.items()}
    variants = schema.get("anyOf")
    if variants and {"type": "null"} in variants:
        rest = [v for v in variants if v != {"type": "null"}]
        schema.pop("anyOf")
        schema.pop("default", None)
        schema.update(rest[0] if len(rest) == 1 else {"anyOf": rest})
        schema["nullable"] = True
    if "examples" in schema and isinstance(schema["examples"], list):
        examples = schema.pop("examples")
        if examples:
            schema["example"] = examples[0]
    return schema


_ALERT_SCHEMA = _openapi_30(AlertIn.model_json_schema())
_EXAMPLE_ALERT = {
    "account_id": "ACC-1043",
    "declared_income_annual": 32000,
    "deposits_total": 148500,
    "deposits_count": 41,
    "withdrawals_total": 141200,
    "withdrawals_count": 44,
    "deposit_withdraw_cycle_days_avg": 1.3,
    "deposits_vs_income_ratio": 4.64,
    "kyc_face_match_score": 0.91,
    "account_age_days": 96,
    "vpn_usage_pct": 12.5,
    "countries_accessed_count": 2,
    "device_shared_count": 1,
    "ip_shared_count": 2,
}


def _error_body(exc: ValidationError) -> dict[str, list[str]]:
    """Field errors as they are; errors about the whole request under DRF's non_field_errors."""
    if not hasattr(exc, "error_dict"):
        return {"non_field_errors": exc.messages}
    return {("non_field_errors" if key == "__all__" else key): messages
            for key, messages in exc.message_dict.items()}


class AlertOutputSerializer(serializers.ModelSerializer):
    reference = serializers.CharField(source="case.reference")
    case_status = serializers.CharField(source="case.status")
    priority = serializers.CharField(source="case.priority")
    account_id = serializers.CharField(source="account.account_id")
    features = serializers.DictField(child=serializers.FloatField(), help_text="The 13 raw features.")
    # Plain strings: the same four values as a case's priority, which already has an enum.
    risk_level = serializers.CharField(help_text="low, medium, high or critical.")
    risk_factors = serializers.ListField(child=serializers.CharField())
    score_source = serializers.ChoiceField(choices=Alert.ScoreSource.choices,
                                           help_text="Whether the scores came from upstream or Casework's scorer.")
    scorer_filled = serializers.ListField(child=serializers.CharField(),
                                          help_text="Score fields Casework's scorer filled in for upstream.")

    class Meta:
        model = Alert
        fields = ["reference", "case_status", "priority", "account_id", "features",
                  "fraud_probability", "anomaly_score", "risk_level", "one_line_explanation", "risk_factors",
                  "score_source", "scorer_filled", "created_at"]


class AlertCreateApi(APIView):
    """Create one fraud alert, or many in one all-or-nothing batch; each opens a fraud case."""

    permission_classes = [IsInvestigator]
    parser_classes = [JSONParser]

    OutputSerializer = AlertOutputSerializer

    @extend_schema(
        operation_id="fraud_alerts_create",
        request={"application/json": {
            "oneOf": [
                _ALERT_SCHEMA,
                {"type": "array", "items": _ALERT_SCHEMA, "minItems": 1,
                 "maxItems": services.MAX_ALERTS_PER_BATCH},
            ],
        }},
        responses={
            201: OpenApiResponse(AlertOutputSerializer,
                                 description="The created alert; for a list, a list of them in the order sent."),
            400: OpenApiResponse(description="Invalid input, keyed by field (one alert) or by "
                                             "\"row N: field\" (a list; rows numbered from 1). Nothing is created."),
        },
        description=(
            "Send one alert object, or a list of them. The 13 features are required; the upstream model's "
            "fraud_probability, anomaly_score, risk_level, one_line_explanation and risk_factors are optional, "
            "and Casework's scorer fills whichever are missing. A list is all or nothing."
        ),
        examples=[
            OpenApiExample("One alert", value=_EXAMPLE_ALERT, request_only=True),
            OpenApiExample("With upstream scores", request_only=True, value={
                **_EXAMPLE_ALERT, "fraud_probability": 0.93, "anomaly_score": 0.88, "risk_level": "critical",
                "one_line_explanation": "Deposits withdrawn within 1.3 days, 4.6x declared income.",
                "risk_factors": ["fast deposit-withdraw cycle", "deposits far above income"]}),
            OpenApiExample("A batch", request_only=True, value=[
                _EXAMPLE_ALERT, {**_EXAMPLE_ALERT, "account_id": "ACC-1044", "device_shared_count": 6}]),
            OpenApiExample("Refused batch", status_codes=["400"], response_only=True, value={
                "non_field_errors": ["Nothing was created: 1 of 2 rows are invalid "
                                     "(rows are numbered from 1 in the order sent)."],
                "row 2: vpn_usage_pct": ["Must be between 0 and 100; got 140."],
                "row 2: colour": ["Unknown field. Expected only: account_id, ..."]}),
        ],
    )
    def post(self, request):
        data = request.data
        try:
            if isinstance(data, list):
                alerts = services.alerts_create_bulk(actor=request.user, rows=data, via="api")
                return Response(self.OutputSerializer(alerts, many=True).data, status=status.HTTP_201_CREATED)
            if not isinstance(data, dict):
                raise ValidationError("Send an alert object or a list of them.")
            alert = services.alert_create(actor=request.user, data=data, via="api")
        except ValidationError as exc:
            return Response(_error_body(exc), status=status.HTTP_400_BAD_REQUEST)
        return Response(self.OutputSerializer(alert).data, status=status.HTTP_201_CREATED)


class AlertDetailApi(APIView):
    """A fraud case's alert: its account, features and scores."""

    permission_classes = [IsInvestigator]

    class OutputSerializer(AlertOutputSerializer):
        title = serializers.CharField(source="case.title")
        similar_confirmed_cases_count = serializers.SerializerMethodField()

        class Meta(AlertOutputSerializer.Meta):
            fields = [*AlertOutputSerializer.Meta.fields, "title", "similar_confirmed_cases_count"]

        def get_similar_confirmed_cases_count(self, alert) -> int:
            return selectors.similar_confirmed_count(alert)

    @extend_schema(operation_id="fraud_alerts_retrieve", responses=OutputSerializer)
    def get(self, request, reference: str):
        case = case_selectors.case_get_for_user(request.user, reference)
        alert = selectors.alert_get_for_case(case)
        if alert is None:
            raise Http404(f"{case.reference} has no fraud alert.")
        return Response(self.OutputSerializer(alert).data)

