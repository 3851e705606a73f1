"""Transaction investigations API: import transactions, start an investigation for a
transaction id, read it, resume it, accept or reject a recommendation, promote the rule.
One view per operation; every error status is in the OpenAPI schema."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.api_errors import JSONObjectParser
from casework.api_schema import pydantic_openapi_30
from casework.cases.api import IsInvestigator
from casework.cases.selectors import case_get_for_user
from casework.idempotency.services import HEADER as IDEMPOTENCY_HEADER
from casework.idempotency.services import idempotent
from casework.transactions import selectors, services
from casework.transactions.ingest import transactions_import
from casework.transactions.models import Investigation, PlannerDecision, Recommendation, RuleDraft, ToolExecution
from casework.transactions.schemas import TransactionIn

E400 = OpenApiResponse(description="Invalid input, keyed by field.")
E401 = OpenApiResponse(description="Not authenticated.")
E403 = OpenApiResponse(description="Not allowed for this user's role.")
E404 = OpenApiResponse(description="No such transaction, investigation or recommendation.")
E409 = OpenApiResponse(description="Conflicts with the current state (body: detail, code).")


class DecisionSerializer(serializers.ModelSerializer):
    class Meta:
        model = PlannerDecision
        fields = ["step", "selected_tool", "reason", "confidence", "used_fallback", "rejected", "timestamp"]


class ExecutionSerializer(serializers.ModelSerializer):
    class Meta:
        model = ToolExecution
        fields = ["step", "tool_name", "status", "execution_time_ms", "error_message", "input_summary",
                  "output_summary", "timestamp"]


class RecommendationSerializer(serializers.ModelSerializer):
    decided_by = serializers.CharField(source="decided_by.username", default=None, allow_null=True)

    class Meta:
        model = Recommendation
        fields = ["id", "action", "title", "reason", "priority", "status", "decided_by", "decided_at", "note"]


class RuleSerializer(serializers.ModelSerializer):
    promoted_by = serializers.CharField(source="promoted_by.username", default=None, allow_null=True)
    monitoring = serializers.SerializerMethodField(
        help_text="What the promoted rule is in monitoring, from its detection rule's version: draft (not "
                  "promoted), proposed (in shadow mode, awaiting another manager's approval), active, approved "
                  "(not running) or rejected.")
    monitoring_label = serializers.SerializerMethodField()

    class Meta:
        model = RuleDraft
        fields = ["name", "description", "conditions", "backtest", "status", "monitoring", "monitoring_label",
                  "promoted_by", "promoted_at"]

    def get_monitoring(self, obj) -> str:
        return obj.standing["key"]

    def get_monitoring_label(self, obj) -> str:
        return obj.standing["label"]


class InvestigationSerializer(serializers.ModelSerializer):
    reference = serializers.CharField(source="case.reference")
    case_status = serializers.CharField(source="case.status")
    transaction_id = serializers.CharField(source="transaction.transaction_id")
    completed_steps = serializers.SerializerMethodField()
    hypotheses = serializers.SerializerMethodField()
    planner_decisions = DecisionSerializer(many=True)
    tool_executions = ExecutionSerializer(many=True)
    recommendations = RecommendationSerializer(many=True)
    rule_draft = serializers.SerializerMethodField()
    severity = serializers.CharField(
        source="assessed_severity", allow_null=True,
        help_text="The agents' severity; null while pending or in progress, for an inconclusive investigation, "
                  "and whenever nothing was analysed yet.")

    class Meta:
        model = Investigation
        fields = ["reference", "case_status", "transaction_id", "status", "severity", "confidence_score", "summary",
                  "error", "completed_steps", "hypotheses", "planner_decisions", "tool_executions",
                  "recommendations", "rule_draft", "started_at", "completed_at"]

    def get_completed_steps(self, obj) -> list[str]:
        return list(obj.state.get("completed_steps", []))

    def get_hypotheses(self, obj) -> list[dict]:
        return list((obj.state.get("reasoning") or {}).get("hypotheses", []))

    def get_rule_draft(self, obj) -> dict | None:
        rule = RuleDraft.objects.filter(investigation=obj).select_related("promoted_by").first()
        return RuleSerializer(rule).data if rule else None


def _investigation(request, reference: str) -> Investigation:
    """The investigation behind the case, if this person may see the case (case_get_for_user:
    403 for someone who works no cases, 404 outside their need-to-know)."""
    investigation = selectors.investigation_get_for_case(case_get_for_user(request.user, reference))
    if investigation is None:
        raise Http404(f"No transaction investigation {reference}.")
    return investigation


def _out(investigation: Investigation, code=status.HTTP_200_OK) -> Response:
    investigation = selectors.investigation_list().prefetch_related(
        "planner_decisions", "tool_executions", "recommendations__decided_by").get(pk=investigation.pk)
    return Response(InvestigationSerializer(investigation).data, status=code)


_IMPORT_SCHEMA = {"type": "object", "required": ["transactions"], "properties": {"transactions": {
    "type": "array", "minItems": 1, "maxItems": 1000,
    "items": pydantic_openapi_30(TransactionIn.model_json_schema())}}}


class TransactionImportInputSerializer(serializers.Serializer):
    transactions = serializers.ListField(child=serializers.DictField(), min_length=1)

    def validate_transactions(self, value):
        limit = settings.TXN_INGEST_MAX_BATCH
        if len(value) > limit:
            raise serializers.ValidationError(f"At most {limit:,} transactions per request; send more batches.")
        return value


class InvestigationStartInputSerializer(serializers.Serializer):
    transaction_id = serializers.CharField(max_length=64)


class RecommendationDecisionInputSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["accept", "reject"])
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class TransactionImportApi(APIView):
    permission_classes = [IsInvestigator]
    parser_classes = [JSONObjectParser]
    InputSerializer = TransactionImportInputSerializer

    @extend_schema(
        operation_id="transactions_import", request={"application/json": _IMPORT_SCHEMA},
        parameters=[OpenApiParameter(IDEMPOTENCY_HEADER, str, OpenApiParameter.HEADER, required=False,
                                     description="Retry safely: the same key and body return the first answer "
                                                 "(header Idempotent-Replayed: true); the same key with another "
                                                 "body is a 422.")],
        responses={201: OpenApiResponse(description="{\"created\": N, \"transaction_ids\": [...]}"),
                   400: OpenApiResponse(description="Nothing imported; errors keyed \"row N: field\"."),
                   401: E401, 403: E403,
                   422: OpenApiResponse(description="Idempotency-Key reused with another body.")},
        description="Ingest card transactions: one object, or {\"transactions\": [...]} with up to "
                    "TXN_INGEST_MAX_BATCH (1,000) of them, all or nothing. Amounts are converted to the settlement "
                    "currency and the active detection rules run on each in the worker.")
    def post(self, request):
        body = request.data
        if isinstance(body, dict) and "transactions" not in body and "transaction_id" in body:
            body = {"transactions": [body]}
        data = self.InputSerializer(data=body)

        def ingest() -> Response:
            data.is_valid(raise_exception=True)
            created = transactions_import(actor=request.user, rows=data.validated_data["transactions"])
            return Response({"created": len(created), "transaction_ids": [t.transaction_id for t in created]},
                            status=status.HTTP_201_CREATED)

        return idempotent(request, operation="transactions_import", handle=ingest)


class InvestigationStartApi(APIView):
    permission_classes = [IsInvestigator]
    parser_classes = [JSONObjectParser]
    InputSerializer = InvestigationStartInputSerializer

    @extend_schema(operation_id="txn_investigations_start", request=InputSerializer,
                   responses={201: InvestigationSerializer, 400: E400, 401: E401, 403: E403,
                              404: OpenApiResponse(description="Unknown transaction id: nothing is started."),
                              409: OpenApiResponse(description="The transaction is already under an open investigation.")},
                   description="Open a TXN case for a stored transaction and queue the planner on it.")
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        investigation = services.investigation_start(actor=request.user,
                                                     transaction_id=data.validated_data["transaction_id"])
        return _out(investigation, status.HTTP_201_CREATED)


class InvestigationDetailApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="txn_investigations_read", responses={200: InvestigationSerializer, 401: E401,
                                                                       403: E403, 404: E404})
    def get(self, request, reference: str):
        return _out(_investigation(request, reference))


class InvestigationResumeApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="txn_investigations_resume", request=None,
                   responses={202: InvestigationSerializer, 401: E401, 403: E403, 404: E404,
                              409: OpenApiResponse(description="Completed (code already_completed), closed, or running.")},
                   description="Continue a FAILED or TIMED_OUT investigation from its saved state; finished tools are "
                               "not run again.")
    def post(self, request, reference: str):
        investigation = _investigation(request, reference)
        services.investigation_resume(actor=request.user, investigation=investigation)
        return _out(investigation, status.HTTP_202_ACCEPTED)


class RecommendationDecideApi(APIView):
    permission_classes = [IsInvestigator]
    parser_classes = [JSONObjectParser]
    InputSerializer = RecommendationDecisionInputSerializer

    @extend_schema(operation_id="txn_recommendations_decide", request=InputSerializer,
                   responses={200: RecommendationSerializer, 400: E400, 401: E401, 403: E403, 404: E404,
                              409: OpenApiResponse(description="Already decided the other way.")})
    def post(self, request, reference: str, pk: int):
        investigation = _investigation(request, reference)
        rec = get_object_or_404(Recommendation, pk=pk, investigation=investigation)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rec = services.recommendation_decide(actor=request.user, recommendation=rec,
                                             accept=data.validated_data["decision"] == "accept",
                                             note=data.validated_data.get("note", ""))
        return Response(RecommendationSerializer(rec).data)


class RulePromoteApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="txn_rules_promote", request=None,
                   responses={200: RuleSerializer, 401: E401,
                              403: OpenApiResponse(description="Only managers and admins promote rules."),
                              404: OpenApiResponse(description="No such investigation, or it drafted no rule."),
                              409: OpenApiResponse(description="The rule is promoted already.")})
    def post(self, request, reference: str):
        if not services.may_promote(request.user):
            raise PermissionDenied("Only managers and admins promote rules.")
        rule = selectors.rule_draft_to_promote(request.user, reference)
        return Response(RuleSerializer(services.rule_promote(actor=request.user, rule=rule)).data)
