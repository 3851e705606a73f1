"""Cases API: one view per operation, with nested input and output serializers."""

from __future__ import annotations

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.cases import selectors, services
from casework.cases.filters import CaseFilter
from casework.cases.models import Case, Comment, Decision
from casework.people.roles import is_investigator


class IsInvestigator(BasePermission):
    message = "Only investigators can see and act on cases."

    def has_permission(self, request, view):
        return is_investigator(request.user)


class DecisionOutputSerializer(serializers.ModelSerializer):
    decided_by = serializers.CharField(source="decided_by.username", default=None, allow_null=True)
    outcome_label = serializers.CharField()

    class Meta:
        model = Decision
        fields = ["outcome", "outcome_label", "reason", "decided_by", "decided_at", "data"]


class CommentOutputSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username")

    class Meta:
        model = Comment
        fields = ["id", "author", "body", "created_at"]


class CaseOutputSerializer(serializers.ModelSerializer):
    assignee = serializers.CharField(source="assignee.username", default=None, allow_null=True)
    restricted = serializers.BooleanField(read_only=True, help_text="Restricted by a lead to named people.")

    class Meta:
        model = Case
        fields = ["reference", "case_type", "title", "status", "priority", "assignee",
                  "created_at", "updated_at", "closed_at", "due_at", "restricted"]


class CaseListApi(ListAPIView):
    """Cases, filtered like the queue (type, status, priority, assignee, sla, q) and paginated."""

    permission_classes = [IsInvestigator]
    serializer_class = CaseOutputSerializer
    filterset_class = CaseFilter

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the schema, nobody asking
            return Case.objects.none()
        return selectors.case_list(self.request.user)


class CaseDetailApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseDetail")
    class OutputSerializer(CaseOutputSerializer):
        description = serializers.CharField()
        decision = serializers.SerializerMethodField()
        comments = serializers.SerializerMethodField()

        class Meta(CaseOutputSerializer.Meta):
            fields = [*CaseOutputSerializer.Meta.fields, "description", "decision", "comments"]

        def get_decision(self, case) -> dict | None:
            decision = selectors.case_final_decision(case)
            return DecisionOutputSerializer(decision).data if decision else None

        def get_comments(self, case) -> list[dict]:
            return CommentOutputSerializer(selectors.case_comments(case), many=True).data

    @extend_schema(responses=OutputSerializer)
    def get(self, request, reference: str):
        case = selectors.case_get_for_user(request.user, reference)
        return Response(self.OutputSerializer(case).data)


class CaseAssignApi(APIView):
    permission_classes = [IsInvestigator]

    # Named components: nested InputSerializers would otherwise collide in the OpenAPI schema.
    @extend_schema_serializer(component_name="CaseAssignInput")
    class InputSerializer(serializers.Serializer):
        assignee = serializers.CharField(allow_null=True, help_text="Username of an investigator, or null to unassign.")

        def validate_assignee(self, value):
            if value is None:
                return None
            user = User.objects.filter(username=value).first()
            if user is None:
                raise serializers.ValidationError(f"No user named {value!r}.")
            return user

    @extend_schema(request=InputSerializer, responses=CaseOutputSerializer,
                   examples=[OpenApiExample("Assign", value={"assignee": "alice"}, request_only=True)])
    def post(self, request, reference: str):
        case = selectors.case_get_for_user(request.user, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        case = services.case_assign(actor=request.user, case=case, assignee=data.validated_data["assignee"])
        return Response(CaseOutputSerializer(case).data)


class CaseCommentApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseCommentInput")
    class InputSerializer(serializers.Serializer):
        body = serializers.CharField(max_length=services.COMMENT_MAX_LENGTH)

    @extend_schema(request=InputSerializer, responses={201: CommentOutputSerializer},
                   examples=[OpenApiExample("Comment", value={"body": "Called the customer."}, request_only=True)])
    def post(self, request, reference: str):
        case = selectors.case_get_for_user(request.user, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        comment = services.case_comment(actor=request.user, case=case, body=data.validated_data["body"])
        return Response(CommentOutputSerializer(comment).data, status=status.HTTP_201_CREATED)


class CaseCloseApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseCloseInput")
    class InputSerializer(serializers.Serializer):
        outcome = serializers.CharField(help_text="One of the case type's outcomes, e.g. confirmed_fraud.")
        reason = serializers.CharField(max_length=5_000)

    @extend_schema(
        request=InputSerializer,
        responses={201: DecisionOutputSerializer},
        description="Record the case's final decision. A second close answers 409.",
        examples=[OpenApiExample("Confirm fraud", value={"outcome": "confirmed_fraud",
                                                          "reason": "Deposit-withdraw cycling with a mule device."},
                                 request_only=True)],
    )
    def post(self, request, reference: str):
        case = selectors.case_get_for_user(request.user, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        decision = services.case_close(actor=request.user, case=case, **data.validated_data)
        return Response(DecisionOutputSerializer(decision).data, status=status.HTTP_201_CREATED)
