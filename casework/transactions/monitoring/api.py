"""Detection rules over the API: list them with their versions and measured performance,
write a rule or a new version, approve, reject or roll back a version, set exchange rates.
The same services as the rules page, so the same checks (four eyes) and the same audit."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.api_errors import JSONObjectParser
from casework.cases.api import IsInvestigator
from casework.transactions.monitoring import selectors, services
from casework.transactions.monitoring.models import CurrencyRate, DetectionRule, RuleVersion

E403 = OpenApiResponse(description="Not allowed for this user's role (approving: managers and admins, not the author).")
E409 = OpenApiResponse(description="Conflicts with the version's state (body: detail, code).")


class DetectionRuleVersionSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username", default=None, allow_null=True)
    approver = serializers.CharField(source="approver.username", default=None, allow_null=True)
    performance = serializers.SerializerMethodField()

    class Meta:
        model = RuleVersion
        fields = ["number", "conditions", "action", "mode", "status", "note", "author", "approver", "created_at",
                  "approved_at", "activated_at", "performance"]

    def get_performance(self, obj) -> dict:
        stats = self.context.get("stats", {}).get(obj.pk)
        if stats is None:
            return {}
        return {"hits": stats.hits, "hits_per_day": stats.hits_per_day, "cases_opened": stats.cases_opened,
                "decided": stats.decided, "fraud": stats.fraud, "not_fraud": stats.not_fraud,
                "precision": stats.precision}


class DetectionRuleSerializer(serializers.ModelSerializer):
    versions = DetectionRuleVersionSerializer(many=True)

    class Meta:
        model = DetectionRule
        fields = ["id", "name", "description", "created_at", "versions"]


class DetectionRuleVersionInSerializer(serializers.Serializer):
    conditions = serializers.JSONField(help_text=(
        'All must hold. A field condition {"field": "amount", "op": "gte", "value": 500}; an aggregate '
        '{"agg": {"fn": "count", "by": "card", "window": "10m"}, "op": "gte", "value": 6} (fn count, sum, avg, '
        'count_distinct with "of"; by card, account, device, ip, email, merchant; window 1m to 90d; optional '
        '"where" filters and "current"); a number against an aggregate times a factor: {"field": "amount", '
        '"op": "gt", "than": {"agg": {"fn": "avg", "of": "amount", "by": "card", "window": "30d"}, "times": 3}}; '
        'a list membership {"in_list": "deny-devices", "field": "device"} (field card, email_hash, ip, device, '
        "merchant or bin; the list must exist and hold that field). See the README's \"Velocity and aggregates "
        'in rules" and "Allow and deny lists".'))
    action = serializers.ChoiceField(choices=RuleVersion.Action.choices)
    mode = serializers.ChoiceField(choices=RuleVersion.Mode.choices)
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


class DetectionRuleInSerializer(DetectionRuleVersionInSerializer):
    name = serializers.CharField(max_length=120)
    description = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


def _rule_out(rule: DetectionRule, code=status.HTTP_200_OK) -> Response:
    rule = selectors.rules_with_versions().get(pk=rule.pk)
    stats = selectors.version_stats(list(rule.versions.all()))
    return Response(DetectionRuleSerializer(rule, context={"stats": stats}).data, status=code)


class ReadOrInvestigator(IsInvestigator):
    """Anyone signed in reads (managers approve what they read); investigators write."""

    def has_permission(self, request, view):
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return bool(request.user and request.user.is_authenticated)
        return super().has_permission(request, view)


class RuleListApi(APIView):
    permission_classes = [ReadOrInvestigator]
    parser_classes = [JSONObjectParser]

    @extend_schema(operation_id="txn_rules_list", responses={200: DetectionRuleSerializer(many=True)})
    def get(self, request):
        rules = list(selectors.rules_with_versions())
        stats = selectors.version_stats([v for r in rules for v in r.versions.all()])
        return Response(DetectionRuleSerializer(rules, many=True, context={"stats": stats}).data)

    @extend_schema(operation_id="txn_rules_create", request=DetectionRuleInSerializer,
                   responses={201: DetectionRuleSerializer, 400: OpenApiResponse(description="Invalid, keyed by field.")},
                   description="Write a rule: version 1 is proposed and runs once a manager or admin who is not "
                               "its author approves it.")
    def post(self, request):
        data = DetectionRuleInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        version = services.rule_create(actor=request.user, **data.validated_data)
        return _rule_out(version.rule, status.HTTP_201_CREATED)


class RuleVersionProposeApi(APIView):
    permission_classes = [IsInvestigator]
    parser_classes = [JSONObjectParser]

    @extend_schema(operation_id="txn_rule_versions_propose", request=DetectionRuleVersionInSerializer,
                   responses={201: DetectionRuleSerializer, 400: OpenApiResponse(description="Invalid, keyed by field."),
                              404: OpenApiResponse(description="No such rule.")})
    def post(self, request, pk: int):
        rule = get_object_or_404(DetectionRule, pk=pk)
        data = DetectionRuleVersionInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.rule_version_propose(actor=request.user, rule=rule, **data.validated_data)
        return _rule_out(rule, status.HTTP_201_CREATED)


ACTIONS = {
    "approve": lambda request, v: services.rule_version_approve(actor=request.user, version=v),
    "reject": lambda request, v: services.rule_version_reject(actor=request.user, version=v,
                                                              reason=str(request.data.get("reason", ""))[:2000]),
    "activate": lambda request, v: services.rule_version_activate(actor=request.user, version=v),
}


class RuleVersionActApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="txn_rule_versions_act", request=None,
                   responses={200: DetectionRuleSerializer, 403: E403, 404: OpenApiResponse(description="No such version."),
                              409: E409},
                   description="approve (a proposed version; it becomes active), reject, or activate (roll back to "
                               "a version approved earlier). Managers and admins; never the version's author.")
    def post(self, request, pk: int, number: int, action: str):
        if action not in ACTIONS:
            raise NotFound(f"No action {action!r}; use {', '.join(ACTIONS)}.")
        version = get_object_or_404(RuleVersion.objects.select_related("rule"), rule_id=pk, number=number)
        ACTIONS[action](request, version)
        return _rule_out(version.rule)


class CurrencyRateSerializer(serializers.ModelSerializer):
    class Meta:
        model = CurrencyRate
        fields = ["currency", "rate", "updated_at"]


class RateApi(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [JSONObjectParser]

    @extend_schema(operation_id="txn_rates_list", responses={200: CurrencyRateSerializer(many=True)})
    def get(self, request):
        return Response(CurrencyRateSerializer(CurrencyRate.objects.all(), many=True).data)

    @extend_schema(operation_id="txn_rates_set", request=CurrencyRateSerializer,
                   responses={200: CurrencyRateSerializer, 400: OpenApiResponse(description="Invalid, keyed by field."),
                              403: E403},
                   description="Set how many settlement-currency units one unit of `currency` is worth "
                               "(managers and admins).")
    def put(self, request):
        if not services.may_approve(request.user):
            from django.core.exceptions import PermissionDenied

            raise PermissionDenied("Only managers and admins set exchange rates.")
        row = services.rate_set(actor=request.user, currency=str(request.data.get("currency", "")),
                                rate=request.data.get("rate", ""))
        return Response(CurrencyRateSerializer(row).data)
