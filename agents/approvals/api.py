"""Approvals through the API: the pending list (filters: team, case type, status), approve
(optionally with edited arguments, checked against the tool's schema) and deny (with a reason)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.approvals import selectors, services
from agents.models import RunPause
from casework.cases.api import IsInvestigator

E400 = OpenApiResponse(description="Arguments that do not fit the tool's schema (the body names the field: "
                                   "arguments.<name>), or a denial without a reason.")
E404 = OpenApiResponse(description="No such approval, or one of a case you may not see.")
E409 = OpenApiResponse(description="The approval was answered already, expired, or its case is closed.")


class ApprovalSerializer(serializers.ModelSerializer):
    case = serializers.CharField(source="case.reference")
    case_title = serializers.CharField(source="case.title")
    run = serializers.IntegerField(source="run_id")
    pipeline = serializers.CharField(source="run.pipeline")

    class Meta:
        model = RunPause
        ref_name = "Approval"
        fields = ["id", "case", "case_title", "case_type", "run", "pipeline", "status", "step", "agent", "tool",
                  "arguments", "reason", "policy", "created_at", "expires_at", "decided_by", "decided_at",
                  "approved_arguments", "answer"]


class ApprovalListApi(ListAPIView):
    """Approvals of the cases you may see, newest first: pending unless `status` says otherwise."""

    permission_classes = [IsInvestigator]
    serializer_class = ApprovalSerializer

    class FilterSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=[*RunPause.Status.values, "all"], required=False,
                                         default=RunPause.Status.PENDING)
        case_type = serializers.CharField(required=False, default="", max_length=40)
        team = serializers.SlugField(required=False, default="", max_length=50)

    @extend_schema(operation_id="approvals_list", parameters=[
        OpenApiParameter("status", str, enum=[*RunPause.Status.values, "all"],
                         description="pending (the default), approved, denied, expired, cancelled, or all."),
        OpenApiParameter("case_type", str, description="Only approvals of this case type (e.g. access_change)."),
        OpenApiParameter("team", str, description="Only approvals of the case types this team owns (its slug)."),
    ])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return RunPause.objects.none()
        params = self.FilterSerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        team = None
        if params.validated_data["team"]:
            team = next((t for t in selectors.teams_for(self.request.user)
                         if t.slug == params.validated_data["team"]), None)
            if team is None:
                raise ValidationError({"team": ["No team of yours has this slug."]})
        status = params.validated_data["status"]
        return selectors.approvals_visible_to(self.request.user, status="" if status == "all" else status,
                                              case_type=params.validated_data["case_type"], team=team)


class ApprovalApproveApi(APIView):
    permission_classes = [IsInvestigator]

    class InputSerializer(serializers.Serializer):
        arguments = serializers.DictField(required=False, help_text=(
            "The tool's arguments as you approve them (edited), checked against its schema; omitted: as the "
            "agent asked."))
        comment = serializers.CharField(required=False, default="", allow_blank=True, max_length=2000)

        class Meta:
            ref_name = "ApprovalApprove"

    @extend_schema(operation_id="approval_approve", request=InputSerializer,
                   responses={200: ApprovalSerializer, 400: E400, 404: E404, 409: E409})
    def post(self, request, pk: int):
        pause = selectors.approval_get_for_user(request.user, pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        pause = services.approval_decide(pause=pause, actor=request.user, approve=True,
                                         arguments=data.validated_data.get("arguments"),
                                         reason=data.validated_data["comment"])
        return Response(ApprovalSerializer(pause).data)


class ApprovalDenyApi(APIView):
    permission_classes = [IsInvestigator]

    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=2000, help_text="Why not: the agent reads it as the tool's result.")

        class Meta:
            ref_name = "ApprovalDeny"

    @extend_schema(operation_id="approval_deny", request=InputSerializer,
                   responses={200: ApprovalSerializer, 400: E400, 404: E404, 409: E409})
    def post(self, request, pk: int):
        pause = selectors.approval_get_for_user(request.user, pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        pause = services.approval_decide(pause=pause, actor=request.user, approve=False,
                                         reason=data.validated_data["reason"])
        return Response(ApprovalSerializer(pause).data)


