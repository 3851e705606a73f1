"""Release API: a CI pipeline posts a release; anyone with the investigator role reads it with
its risk report and the detective's tool calls, and records the go / no_go / deferred."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.cases.api import IsInvestigator
from casework.releases import selectors, services
from casework.releases.models import Release, RiskReport

E400 = OpenApiResponse(description="Invalid input, keyed by field (e.g. tests.failed, test_details.3.status).")
E403 = OpenApiResponse(description="Only release managers and admins decide releases.")
E404 = OpenApiResponse(description="No such release.")
E409 = OpenApiResponse(description="Duplicate release, case already decided, or an override to confirm "
                                   "(code override_needs_confirmation).")


class ReleaseTestSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    area = serializers.CharField(max_length=60, required=False, allow_blank=True)
    critical = serializers.BooleanField(required=False)
    status = serializers.ChoiceField(choices=["passed", "failed", "skipped"])
    message = serializers.CharField(required=False, allow_blank=True)


class ReleaseSubmitSerializer(serializers.Serializer):
    """Documents the JSON shape; validation is casework.releases.schemas (every bad field named)."""

    release_id = serializers.CharField(max_length=64)
    version = serializers.CharField(max_length=64)
    changes = serializers.ListField(child=serializers.CharField(max_length=500), required=False)
    tests = serializers.DictField(child=serializers.IntegerField(min_value=0), required=False,
                                  help_text="passed, failed, skipped; optional when test_details are given.")
    deployment_metrics = serializers.DictField(child=serializers.FloatField(allow_null=True), required=False,
                                               help_text="error_rate (fraction), response_time_p95 (ms); null = missing.")
    test_details = ReleaseTestSerializer(many=True, required=False)


class RiskReportSerializer(serializers.ModelSerializer):
    run = serializers.IntegerField(source="run_id", allow_null=True)

    class Meta:
        model = RiskReport
        fields = ["report_id", "severity", "findings", "missing_data", "adjusted_from", "adjusted_reason", "provider",
                  "run", "filed_at"]


class ReleaseOutputSerializer(serializers.ModelSerializer):
    reference = serializers.CharField(source="case.reference")
    case_status = serializers.CharField(source="case.status")
    tests = serializers.SerializerMethodField()
    deployment_metrics = serializers.SerializerMethodField()
    report = serializers.SerializerMethodField()
    tool_calls = serializers.SerializerMethodField()

    class Meta:
        model = Release
        fields = ["reference", "case_status", "release_id", "version", "changes", "tests", "deployment_metrics",
                  "assessment", "assessment_error", "report", "tool_calls", "created_at"]

    def get_tests(self, obj) -> dict:
        return obj.summary()["tests"]

    def get_deployment_metrics(self, obj) -> dict:
        return obj.summary()["deployment_metrics"]

    def get_report(self, obj) -> dict | None:
        report = selectors.release_latest_report(obj)
        return RiskReportSerializer(report).data if report else None

    def get_tool_calls(self, obj) -> list[dict]:
        return [{"name": c.name, "arguments": c.input, "ok": c.status == "ok",
                 "result": (c.output or {}).get("result") if c.status == "ok" else None, "error": c.error}
                for c in selectors.release_tool_calls(obj)]


class ReleaseSubmitApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="release_submit", request=ReleaseSubmitSerializer,
                   responses={201: ReleaseOutputSerializer, 400: E400, 409: E409})
    def post(self, request):
        release = services.release_submit(actor=request.user, data=request.data, via="api")
        return Response(ReleaseOutputSerializer(release).data, status=status.HTTP_201_CREATED)


class ReleaseDetailApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="release_detail", responses={200: ReleaseOutputSerializer, 404: E404})
    def get(self, request, release_id: str):
        release = selectors.release_get_for_user(request.user, release_id)
        return Response(ReleaseOutputSerializer(release).data)


class ReleaseDecisionApi(APIView):
    permission_classes = [IsInvestigator]

    class InputSerializer(serializers.Serializer):
        outcome = serializers.ChoiceField(choices=["go", "no_go", "deferred"])
        reason = serializers.CharField(max_length=5000)
        confirm_override = serializers.BooleanField(default=False)

        class Meta:
            ref_name = "ReleaseDecisionInput"

    @extend_schema(operation_id="release_decide", request=InputSerializer,
                   responses={201: ReleaseOutputSerializer, 400: E400, 403: E403, 404: E404, 409: E409})
    def post(self, request, release_id: str):
        release = selectors.release_get_for_user(request.user, release_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.release_decide(actor=request.user, release=release, **data.validated_data)
        release = selectors.release_get_for_user(request.user, release_id)
        return Response(ReleaseOutputSerializer(release).data, status=status.HTTP_201_CREATED)
