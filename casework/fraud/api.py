"""Fraud alerts API: one view per operation, with nested input and output serializers.

Incoming alerts are validated by `schemas.AlertIn` (the same definition the CSV import and
the admin use), and the request schema in OpenAPI is generated from it.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.api_schema import object_or_list_register, pydantic_component
from casework.cases import selectors as case_selectors
from casework.cases import services as case_services
from casework.cases.api import DecisionOutputSerializer, IsInvestigator
from casework.cases.types import CASE_TYPES
from casework.fraud import selectors, services
from casework.fraud.models import Alert
from casework.fraud.schemas import AlertIn
from casework.fraud.states import AlertStatus

_ALERT_SCHEMA = pydantic_component(AlertIn)
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
    # A plain string, as risk_level: the alert's own lifecycle (GET /lifecycles/ draws it).
    status = serializers.CharField(help_text="The alert's own state: " + ", ".join(AlertStatus.values) + ".")
    status_label = serializers.CharField(source="get_status_display")
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
        fields = ["reference", "case_status", "status", "status_label", "priority", "account_id", "features",
                  "fraud_probability", "anomaly_score", "risk_level", "one_line_explanation", "risk_factors",
                  "score_source", "scorer_filled", "created_at"]


class AlertCreateApi(APIView):
    """Create one fraud alert, or many in one all-or-nothing batch; each opens a fraud case."""

    permission_classes = [IsInvestigator]
    # A list is a batch (its shape checked below), so not the default JSONObjectParser.
    parser_classes = [JSONParser]

    OutputSerializer = AlertOutputSerializer

    # One alert in, one out; a list in, a list out (the schema's 201 says both).
    object_or_list_register("fraud_alerts_create", "201")

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


# --- One fraud case: every agent's latest result, re-assess, re-run, close ---------------

AGENT_STATUS_HELP = ("completed (output holds the agent's fields), failed (error says why), pending (the run "
                     "is still going) or not_run (the run ended before this agent, or there is no run).")
FRAUD_OUTCOMES = CASE_TYPES["fraud_alert"].outcomes


def _alert_for(request, reference: str) -> Alert:
    case = case_selectors.case_get_for_user(request.user, reference)
    alert = selectors.alert_get_for_case(case)
    if alert is None:
        raise Http404(f"{case.reference} has no fraud alert.")
    return alert


@extend_schema_serializer(component_name="FraudRun")
class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    mode = serializers.CharField(help_text="alert_creation (all six agents), case_open (re-assess: the "
                                           "orchestrator over cached specialists) or close (knowledge capture).")
    status = serializers.CharField(help_text="queued, running, completed, failed or timed_out.")
    active = serializers.BooleanField(source="is_active", help_text="True while queued or running.")
    provider = serializers.CharField(help_text="The LLM provider that answered; \"offline\" for the rule-based "
                                               "analysts.")
    requested_by = serializers.CharField()
    error = serializers.CharField(help_text="Why the whole run stopped, if it did.")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


@extend_schema_serializer(component_name="FraudAgentResult")
class AgentResultSerializer(serializers.Serializer):
    status = serializers.CharField(help_text=AGENT_STATUS_HELP)
    output = serializers.JSONField(allow_null=True, help_text="The agent's fields, named as in seed 000's table.")
    error = serializers.CharField(help_text="What went wrong, as the case page says it.")
    error_type = serializers.CharField(help_text="rate_limit, timeout, network, authentication, validation, "
                                                 "invalid_output, provider ... or empty.")
    cached = serializers.BooleanField(help_text="Copied from an earlier run of this account (re-assess).")
    latency_ms = serializers.IntegerField()
    attempts = serializers.IntegerField()


@extend_schema_serializer(component_name="FraudAgentResults")
class AgentResultsSerializer(serializers.Serializer):
    transaction = AgentResultSerializer()
    identity = AgentResultSerializer()
    geo = AgentResultSerializer()
    network = AgentResultSerializer()
    outcome_similarity = AgentResultSerializer()
    orchestrator = AgentResultSerializer()


@extend_schema_serializer(component_name="FraudSimilarCase")
class SimilarCaseSerializer(serializers.Serializer):
    reference = serializers.CharField()
    account_id = serializers.CharField()
    distance = serializers.FloatField(help_text="Distance between the alerts' standardised features (<= 3.0, "
                                                "unless a person linked the case).")
    linked_as = serializers.CharField(required=False, help_text="What a person linked the case as (related, "
                                                                "duplicate, parent, child); absent when only its "
                                                                "features made it similar.")


@extend_schema_serializer(component_name="FraudAssessment")
class AssessmentSerializer(serializers.Serializer):
    run = RunOutputSerializer(allow_null=True, help_text="The newest assessment run (alert_creation or case_open).")
    agents = AgentResultsSerializer(help_text="Each agent's result in that run.")
    similar_confirmed_cases = SimilarCaseSerializer(many=True, source="similar_cases")


@extend_schema_serializer(component_name="FraudKnowledgePattern")
class PatternSerializer(serializers.Serializer):
    key_signals = serializers.ListField(child=serializers.CharField())
    behavioral_pattern = serializers.CharField()
    final_outcome = serializers.CharField()
    one_sentence_description = serializers.CharField()
    created_at = serializers.DateTimeField()


_EXAMPLE_RESULTS = {
    "transaction": {"status": "completed", "output": {
        "anomaly_score": 0.9, "detected_patterns": ["rapid deposit-withdraw cycling: 1.3 days on average"],
        "short_explanation": "Deposits leave within 1.3 days and total 4.6x the declared income."},
        "error": "", "error_type": "", "cached": False, "latency_ms": 412, "attempts": 1},
    "identity": {"status": "completed", "output": {
        "identity_risk": "low", "indicators": ["good KYC face match 0.94"],
        "explanation": "The selfie matches the document; the account is three months old."},
        "error": "", "error_type": "", "cached": False, "latency_ms": 388, "attempts": 1},
    "geo": {"status": "failed", "output": None, "error": "Rate limit reached. Please try again in a minute.",
            "error_type": "rate_limit", "cached": False, "latency_ms": 9012, "attempts": 4},
    "network": {"status": "completed", "output": {
        "cluster_size": 1, "known_fraud_links": 0, "shared_signals": ["IP address shared with 1 other account"],
        "explanation": "Consistent with a household."},
        "error": "", "error_type": "", "cached": False, "latency_ms": 377, "attempts": 1},
    "outcome_similarity": {"status": "completed", "output": {
        "fraud_likelihood": 0.8, "similar_confirmed_cases_count": 2,
        "explanation": "Two similar accounts were confirmed as deposit-withdraw cycling."},
        "error": "", "error_type": "", "cached": False, "latency_ms": 402, "attempts": 1},
    "orchestrator": {"status": "completed", "output": {
        "risk_level": "high", "confidence": 0.7, "priority": "high",
        "key_drivers": ["Transaction: rapid deposit-withdraw cycling", "Outcome similarity: likelihood 0.80"],
        "investigation_summary": "High risk: money cycles through the account far beyond declared income; "
                                 "identity and network look ordinary; geo was unavailable."},
        "error": "", "error_type": "", "cached": False, "latency_ms": 655, "attempts": 1},
}
_EXAMPLE_RUN = {"id": 41, "mode": "alert_creation", "status": "completed", "active": False, "provider": "openai",
                "requested_by": "api-bot", "error": "", "created_at": "2025-11-20T09:14:02Z",
                "finished_at": "2025-11-20T09:14:04Z"}


class AlertDetailApi(APIView):
    """A fraud case's alert, its latest assessment (every agent's result and the run's status),
    its decision and the pattern captured when it was closed."""

    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="FraudAlertDetail")
    class OutputSerializer(AlertOutputSerializer):
        title = serializers.CharField(source="case.title")
        similar_confirmed_cases_count = serializers.SerializerMethodField()
        assessment = serializers.SerializerMethodField()
        decision = serializers.SerializerMethodField()
        knowledge_pattern = serializers.SerializerMethodField()
        knowledge_capture = serializers.SerializerMethodField()

        class Meta(AlertOutputSerializer.Meta):
            fields = [*AlertOutputSerializer.Meta.fields, "title", "similar_confirmed_cases_count", "assessment",
                      "decision", "knowledge_pattern", "knowledge_capture"]

        def _view(self, alert) -> dict:
            if not hasattr(self, "_assessment"):
                self._assessment = selectors.fraud_assessment(alert.case, viewer=self.context["request"].user)
            return self._assessment

        def get_similar_confirmed_cases_count(self, alert) -> int:
            return selectors.similar_confirmed_count(alert)

        @extend_schema_field(AssessmentSerializer)
        def get_assessment(self, alert) -> dict:
            return AssessmentSerializer(self._view(alert)).data

        @extend_schema_field(DecisionOutputSerializer(allow_null=True))
        def get_decision(self, alert) -> dict | None:
            decision = case_selectors.case_final_decision(alert.case)
            return DecisionOutputSerializer(decision).data if decision else None

        @extend_schema_field(PatternSerializer(allow_null=True))
        def get_knowledge_pattern(self, alert) -> dict | None:
            pattern = self._view(alert)["pattern"]
            return PatternSerializer(pattern).data if pattern else None

        @extend_schema_field(AgentResultSerializer(allow_null=True))
        def get_knowledge_capture(self, alert) -> dict | None:
            capture = self._view(alert)["capture"]
            return AgentResultSerializer(capture).data if capture else None

    @extend_schema(
        operation_id="fraud_alerts_retrieve",
        responses=OutputSerializer,
        description="Opening a case calls no LLM: this reads the stored results. Poll it while "
                    "assessment.run.active is true; agents' results appear as they land.",
        examples=[OpenApiExample("Assessed, one specialist rate-limited", response_only=True, value={
            "reference": "FRA-000042", "case_status": "new", "priority": "high", "account_id": "ACC-1043",
            "title": "Account ACC-1043: deposit-withdraw cycling", "similar_confirmed_cases_count": 2,
            "assessment": {"run": _EXAMPLE_RUN, "agents": _EXAMPLE_RESULTS, "similar_confirmed_cases": [
                {"reference": "FRA-000007", "account_id": "ACC-0311", "distance": 1.42}]},
            "decision": None, "knowledge_pattern": None, "knowledge_capture": None,
        })],
    )
    def get(self, request, reference: str):
        alert = _alert_for(request, reference)
        return Response(self.OutputSerializer(alert, context={"request": request}).data)


_RUN_RESPONSES = {
    202: OpenApiResponse(RunOutputSerializer, description="The run is queued; follow it on GET "
                                                          "/api/fraud/alerts/{reference}/."),
    409: OpenApiResponse(description="A run of this case is already queued or running."),
}


class AlertReassessApi(APIView):
    """Re-assess: only the orchestrator runs again, over the specialists' cached results (one LLM call)."""

    permission_classes = [IsInvestigator]

    @extend_schema(
        operation_id="fraud_alerts_reassess", request=None, responses=_RUN_RESPONSES,
        examples=[OpenApiExample("Queued", response_only=True, status_codes=["202"],
                                 value={**_EXAMPLE_RUN, "id": 42, "mode": "case_open", "status": "queued",
                                        "active": True, "finished_at": None}),
                  OpenApiExample("Already running", response_only=True, status_codes=["409"],
                                 value={"detail": "FRA-000042 is already being assessed; wait for that run to "
                                                  "finish.", "code": "run_active"})],
    )
    def post(self, request, reference: str):
        run = services.alert_reassess(actor=request.user, alert=_alert_for(request, reference))
        run.refresh_from_db()  # with an eager queue (tests, demos) it may already be done
        return Response(RunOutputSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class AlertRerunApi(APIView):
    """Re-run all: the five specialists and the orchestrator run again (six LLM calls); earlier runs are kept."""

    permission_classes = [IsInvestigator]

    @extend_schema(
        operation_id="fraud_alerts_rerun", request=None, responses=_RUN_RESPONSES,
        examples=[OpenApiExample("Queued", response_only=True, status_codes=["202"],
                                 value={**_EXAMPLE_RUN, "id": 43, "status": "queued", "active": True,
                                        "finished_at": None})],
    )
    def post(self, request, reference: str):
        run = services.alert_rerun_all(actor=request.user, alert=_alert_for(request, reference))
        run.refresh_from_db()
        return Response(RunOutputSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class AlertCaptureRetryApi(APIView):
    """Retry a knowledge capture that failed at close: the knowledge capture agent runs again on
    the final decision (one LLM call); audited with who asked."""

    permission_classes = [IsInvestigator]

    @extend_schema(
        operation_id="fraud_alerts_capture_retry", request=None,
        responses={**_RUN_RESPONSES, 409: OpenApiResponse(
            description="The capture did not fail (the alert is not in capture_failed), or it is running.")},
        examples=[OpenApiExample("Queued", response_only=True, status_codes=["202"],
                                 value={**_EXAMPLE_RUN, "id": 44, "mode": "close", "status": "queued",
                                        "active": True, "finished_at": None})],
    )
    def post(self, request, reference: str):
        run = services.alert_capture_retry(actor=request.user, alert=_alert_for(request, reference))
        run.refresh_from_db()
        return Response(RunOutputSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class AlertCloseApi(APIView):
    """Close the fraud case: Confirm Fraud, Mark Legit or Dismiss as False Positive, with a reason.

    One decision per case. Closing starts the knowledge capture agent; its pattern appears on
    GET /api/fraud/alerts/{reference}/ as knowledge_pattern.
    """

    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="FraudCloseInput")
    class InputSerializer(serializers.Serializer):
        outcome = serializers.ChoiceField(choices=FRAUD_OUTCOMES,
                                          help_text="confirmed_fraud, legit or false_positive.")
        reason = serializers.CharField(max_length=5_000, help_text="Why; kept with the decision and audited.")

    @extend_schema_serializer(component_name="FraudCloseOutput")
    class OutputSerializer(DecisionOutputSerializer):
        reference = serializers.CharField(source="case.reference")
        knowledge_pattern = serializers.SerializerMethodField()

        class Meta(DecisionOutputSerializer.Meta):
            fields = ["reference", *DecisionOutputSerializer.Meta.fields, "knowledge_pattern"]

        @extend_schema_field(PatternSerializer(allow_null=True))
        def get_knowledge_pattern(self, decision) -> dict | None:
            pattern = selectors.pattern_for_case(decision.case)
            return PatternSerializer(pattern).data if pattern else None

    @extend_schema(
        operation_id="fraud_alerts_close",
        request=InputSerializer,
        responses={
            201: OutputSerializer,
            400: OpenApiResponse(description="A missing or invalid field, named."),
            409: OpenApiResponse(description="The case is already closed."),
        },
        examples=[
            OpenApiExample("Confirm fraud", request_only=True, value={
                "outcome": "confirmed_fraud",
                "reason": "Deposits leave within two days; the income does not explain them."}),
            OpenApiExample("Missing reason", response_only=True, status_codes=["400"],
                           value={"reason": ["This field is required."]}),
            OpenApiExample("Second close", response_only=True, status_codes=["409"], value={
                "detail": "FRA-000042 was already closed by alice at 2025-11-20 09:30 UTC.",
                "code": "already_closed"}),
        ],
    )
    def post(self, request, reference: str):
        alert = _alert_for(request, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        decision = case_services.case_close(actor=request.user, case=alert.case, **data.validated_data)
        return Response(self.OutputSerializer(decision).data, status=status.HTTP_201_CREATED)
