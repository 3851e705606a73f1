"""A case's budget through the API: GET its spend against its budget (whoever sees the case);
POST a new budget (a lead: raising it resumes a run waiting in "Budget reached"); POST .../stop/
to stop the runs waiting for it instead."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.budgets import services
from casework.budgets.selectors import case_spend, runs_waiting_for_budget
from casework.cases import selectors
from casework.cases.api import IsInvestigator
from casework.cases.visibility import user_leads


@extend_schema_serializer(component_name="CaseBudget")
class BudgetOutputSerializer(serializers.Serializer):
    reference = serializers.CharField()
    limit_usd = serializers.DecimalField(max_digits=14, decimal_places=6, allow_null=True,
                                         help_text="The money limit in US$; null: none.")
    limit_tokens = serializers.IntegerField(allow_null=True, help_text="The token limit; null: none.")
    spent_usd = serializers.DecimalField(max_digits=14, decimal_places=6)
    spent_tokens = serializers.IntegerField()
    reserved_usd = serializers.DecimalField(max_digits=14, decimal_places=6,
                                            help_text="Reserved by calls in flight now.")
    reserved_tokens = serializers.IntegerField()
    calls = serializers.IntegerField(help_text="Model calls charged to the case.")
    refused = serializers.IntegerField(help_text="Calls refused by the budget.")
    overridden = serializers.BooleanField(help_text="A lead set this case's budget (else its type's applies).")
    reached = serializers.BooleanField(help_text="A call was refused and the budget was not raised since.")
    waiting_runs = serializers.ListField(child=serializers.IntegerField(),
                                         help_text='Runs waiting in "Budget reached".')


def _usd(musd: int | None):
    from decimal import Decimal

    return None if musd is None else Decimal(musd) / Decimal(1_000_000)


def _output(case) -> dict:
    spend = case_spend(case)
    return BudgetOutputSerializer({
        "reference": case.reference, "limit_usd": _usd(spend.limit_musd), "limit_tokens": spend.limit_tokens,
        "spent_usd": _usd(spend.spent_musd), "spent_tokens": spend.spent_tokens,
        "reserved_usd": _usd(spend.reserved_musd), "reserved_tokens": spend.reserved_tokens, "calls": spend.calls,
        "refused": spend.refused, "overridden": spend.overridden, "reached": spend.reached,
        "waiting_runs": [run.pk for run in runs_waiting_for_budget(case)]}).data


def _lead_case(user, reference: str):
    """404 for whoever may not see the case; 403, before the body is read, for whoever sees it
    but leads no team owning its type."""
    case = selectors.case_get_for_user(user, reference)
    if not user_leads(user, case):
        raise PermissionDenied("Only a lead of a team that owns this case type, or an admin, changes its budget.")
    return case


class CaseBudgetApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseBudgetInput")
    class InputSerializer(serializers.Serializer):
        limit_usd = serializers.DecimalField(max_digits=13, decimal_places=6, min_value=0,
                                             max_value=services.USD_MAX, allow_null=True, required=False,
                                             help_text="US$; null or absent: no money limit.")
        limit_tokens = serializers.IntegerField(min_value=0, max_value=services.TOKENS_MAX, allow_null=True,
                                                required=False, help_text="Tokens; null or absent: no token limit.")
        reason = serializers.CharField(max_length=services.REASON_MAX_LENGTH)

    @extend_schema(responses=BudgetOutputSerializer, description="The case's spend against its budget.")
    def get(self, request, reference: str):
        return Response(_output(selectors.case_get_for_user(request.user, reference)))

    @extend_schema(request=InputSerializer, responses=BudgetOutputSerializer,
                   description='Set the case\'s budget (a lead of a team owning its type, or an admin). Runs '
                               'waiting in "Budget reached" resume when it leaves room.',
                   examples=[OpenApiExample("Raise", request_only=True, value={
                       "limit_usd": "12.50", "limit_tokens": 4000000, "reason": "Worth finishing the review."})])
    def post(self, request, reference: str):
        case = _lead_case(request.user, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        services.budget_set(actor=request.user, case=case, limit_usd=values.get("limit_usd"),
                            limit_tokens=values.get("limit_tokens"), reason=values["reason"])
        return Response(_output(case))


class CaseBudgetStopApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseBudgetStopInput")
    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=services.REASON_MAX_LENGTH)

    @extend_schema(request=InputSerializer, responses=BudgetOutputSerializer,
                   description='Stop the case\'s runs waiting in "Budget reached" instead of raising it.',
                   examples=[OpenApiExample("Stop", request_only=True, value={"reason": "Enough spent on it."})])
    def post(self, request, reference: str):
        case = _lead_case(request.user, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        for run in runs_waiting_for_budget(case):
            services.budget_run_stop(actor=request.user, run=run, reason=data.validated_data["reason"])
        return Response(_output(case))
