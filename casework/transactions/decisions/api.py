"""POST /api/transactions/decide: one transaction in, allow, review or block out, in the same
request (casework/transactions/decisions/services.py)."""

from __future__ import annotations

import time
import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.api_errors import JSONObjectParser
from casework.api_schema import pydantic_openapi_30
from casework.cases.api import IsInvestigator
from casework.cases.visibility import case_type_visible
from casework.idempotency.services import HEADER as IDEMPOTENCY_HEADER
from casework.idempotency.services import idempotent
from casework.transactions.decisions.models import Decision
from casework.transactions.decisions.services import transaction_decide
from casework.transactions.schemas import TransactionIn


class TransactionDecisionHitSerializer(serializers.Serializer):
    rule = serializers.CharField(required=False, help_text="A live rule that hit (with its version).")
    version = serializers.IntegerField(required=False)
    action = serializers.ChoiceField(choices=["allow", "review", "block"], required=False)
    list = serializers.CharField(required=False, help_text="A deny or allow list the transaction's value is on.")
    kind = serializers.ChoiceField(choices=["allow", "deny"], required=False)
    field = serializers.CharField(required=False)
    value = serializers.CharField(required=False)
    reason = serializers.CharField()


class TransactionDecisionSerializer(serializers.ModelSerializer):
    transaction_id = serializers.CharField(source="transaction.transaction_id")
    hits = TransactionDecisionHitSerializer(many=True)

    class Meta:
        model = Decision
        fields = ["decision_id", "transaction_id", "outcome", "score", "timed_out", "hits", "rules_evaluated",
                  "latency_us", "created_at"]


def _when(moment) -> str:
    """As DRF writes a date-time (ISO 8601, UTC as Z)."""
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def decision_data(decision: Decision) -> dict:
    """TransactionDecisionSerializer's output, written by hand: this runs on every decision,
    and a serializer with nested hits costs more than the decision's own rules."""
    return {"decision_id": str(decision.decision_id), "transaction_id": decision.transaction.transaction_id,
            "outcome": decision.outcome, "score": decision.score, "timed_out": decision.timed_out,
            "hits": decision.hits, "rules_evaluated": decision.rules_evaluated, "latency_us": decision.latency_us,
            "created_at": _when(decision.created_at)}


EXAMPLE = {"transaction_id": "TX-20261129-0001", "account_id": "CARD-1001", "card_last4": "4242", "amount": "1.00",
           "currency": "EUR", "merchant": "Web Shop", "mcc": "5999", "country": "NL", "channel": "ecommerce",
           "device_id": "dev-7f3a", "occurred_at": "2026-11-29T07:00:00Z", "home_country": "NL"}


class DecideApi(APIView):
    permission_classes = [IsInvestigator]
    parser_classes = [JSONObjectParser]
    # The deadline's clock (monotonic seconds); a test gives one that advances per call.
    clock = staticmethod(time.monotonic)

    @extend_schema(
        operation_id="transactions_decide",
        request={"application/json": pydantic_openapi_30(TransactionIn.model_json_schema())},
        examples=[OpenApiExample("A card-not-present purchase", value=EXAMPLE, request_only=True)],
        parameters=[OpenApiParameter(IDEMPOTENCY_HEADER, str, OpenApiParameter.HEADER, required=False,
                                     description="Retry safely: the same key and body return the first decision "
                                                 "(same decision_id; header Idempotent-Replayed: true); the same "
                                                 "key with another body is a 422.")],
        responses={201: TransactionDecisionSerializer,
                   400: OpenApiResponse(description="Invalid transaction, keyed by field; nothing stored."),
                   401: OpenApiResponse(description="Not authenticated."),
                   403: OpenApiResponse(description="Not allowed for this user's role."),
                   422: OpenApiResponse(description="Idempotency-Key reused with another body.")},
        description="Decide one transaction at authorisation time (the ingest format, one object). The deny and "
                    "allow lists are read, then the live rules in order until the outcome is settled or "
                    "TXN_DECISION_BUDGET_MS (50) has passed; past it the outcome is TXN_DECISION_FALLBACK, with "
                    "timed_out true. The transaction and the decision are stored; the worker then runs every live "
                    "and shadow rule, opens or joins the card's case for review or block, requests the card block "
                    "for a block rule, and records its hits on the decision.")
    def post(self, request):
        started, started_ns = self.clock(), time.perf_counter_ns()

        def decide() -> Response:
            decision = transaction_decide(actor=request.user, data=request.data, started=started,
                                          started_ns=started_ns, clock=self.clock)
            return Response(decision_data(decision), status=status.HTTP_201_CREATED)

        return idempotent(request, operation="transactions_decide", handle=decide)


class DecisionDetailApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(
        operation_id="transactions_decision_detail",
        parameters=[OpenApiParameter("decision_id", OpenApiTypes.UUID, OpenApiParameter.PATH,
                                     description="The decision_id the decide call answered.")],
        responses={200: TransactionDecisionSerializer,
                   401: OpenApiResponse(description="Not authenticated."),
                   403: OpenApiResponse(description="Not allowed for this user's role."),
                   404: OpenApiResponse(description="No decision with this id.")},
        description="One decision by its decision_id, as POST /api/transactions/decide answered it: for "
                    "investigators whose teams work transaction investigations, and admins (anyone else: 404, "
                    "as for no such decision).")
    def get(self, request, decision_id: str):
        try:
            key = uuid.UUID(str(decision_id))
        except ValueError:
            raise NotFound("No decision with this id.") from None
        # A decision reads back a card's transaction and the rules that hit it (amounts in their
        # reasons): for the people whose teams work transaction investigations, and admins. Anyone
        # else is answered as for a decision that does not exist, as a hidden case is.
        decision = (Decision.objects.select_related("transaction").filter(decision_id=key).first()
                    if case_type_visible(request.user, "transaction_investigation") else None)
        if decision is None:
            raise NotFound("No decision with this id.")
        return Response(decision_data(decision))
