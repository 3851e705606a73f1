"""Access-change API: one view per operation, with the same rules as the pages.

POST /api/access/mutations/                  submit a change (investigators); starts its investigation
GET  /api/access/mutations/<reference>/      the case with status, evidence, messages, answers, report
POST /api/access/answers/employee/           the employee's answer: the link's token in the body, no login
GET  /api/access/inbox/                      the manager's open validation requests
POST /api/access/requests/<id>/answer/       the manager's answer (only to requests addressed to them)
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from casework.access import selectors, services
from casework.access.models import (
    AccessLevel,
    AdvisoryReport,
    AgentMessage,
    Employee,
    EmployeeClaim,
    HRMutation,
    InfoRequest,
    ManagerVerdict,
    RightsCheck,
    System,
)
from casework.access.special import claim_masked
from casework.cases.api import IsInvestigator
from casework.cases.selectors import case_final_decision, case_get_for_user
from casework.people.roles import is_manager


class IsManager(BasePermission):
    message = "Only managers answer validation requests."

    def has_permission(self, request, view):
        return is_manager(request.user)


def _lookup(model, field: str, label: str):
    def validate(value):
        obj = model.objects.filter(**{field: value}).first()
        if obj is None:
            raise serializers.ValidationError(f"No {label} {value!r}.")
        return obj

    return validate


# --- output -----------------------------------------------------------------------------------

class MessageOutputSerializer(serializers.ModelSerializer):
    status = serializers.CharField(help_text="pending, success or error.")

    class Meta:
        model = AgentMessage
        fields = ["sender", "receiver", "action", "context", "correlation_id", "timestamp", "status", "error"]


class RightsCheckOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = RightsCheck
        fields = ["authorized", "held_level", "evidence", "message", "checked_at"]


class ClaimOutputSerializer(serializers.ModelSerializer):
    """The absence's kind and dates (and what quotes them) are special-category: masked unless
    the context's `viewer` is in a team owning access changes, or the manager the request is
    `addressed` to (casework/access/special.py). No viewer: masked."""

    colleague = serializers.CharField(source="colleague.employee_id", default=None, allow_null=True)

    class Meta:
        model = EmployeeClaim
        fields = ["claim_type", "colleague", "period_start", "period_end", "explanation", "submitted_at",
                  "validation_status", "validation"]

    def to_representation(self, claim):
        return claim_masked(self.context.get("viewer"), claim, super().to_representation(claim),
                            addressed=self.context.get("addressed", False))


class VerdictOutputSerializer(serializers.ModelSerializer):
    decided_by = serializers.CharField(source="decided_by.username")

    class Meta:
        model = ManagerVerdict
        fields = ["approved", "comment", "decided_by", "decided_at"]


class RequestOutputSerializer(serializers.ModelSerializer):
    recipient = serializers.CharField(source="recipient.employee_id")
    kind = serializers.CharField(help_text="employee_clarification or manager_validation.")
    state = serializers.SerializerMethodField()

    class Meta:
        model = InfoRequest
        fields = ["id", "kind", "recipient", "subject", "sent_at", "expires_at", "answered_at", "cancelled_at",
                  "reminder_count", "escalated_at", "state"]

    def get_state(self, obj) -> str:
        return obj.state()


class ReportOutputSerializer(serializers.ModelSerializer):
    kind = serializers.CharField(help_text="standard or manual_intervention.")
    recommendation = serializers.CharField(help_text="accept, reject_investigate or manual_intervention.")

    class Meta:
        model = AdvisoryReport
        fields = ["report_id", "kind", "summary", "recommendation", "details", "created_at"]


@extend_schema_serializer(component_name="AccessMutation")
class MutationOutputSerializer(serializers.ModelSerializer):
    changed_by = serializers.CharField(source="changed_by.employee_id")
    changed_for = serializers.CharField(source="changed_for.employee_id")
    system = serializers.CharField(source="system.code")
    access_level = serializers.CharField(source="access_level.name")
    manager = serializers.CharField(source="manager.employee_id", default=None, allow_null=True)
    status = serializers.CharField(help_text="The access status (the seed's change_investigation).")
    status_label = serializers.CharField()
    changed_by_name = serializers.CharField(source="changed_by.name")
    changed_for_name = serializers.CharField(source="changed_for.name")
    self_change = serializers.BooleanField(source="is_self_change",
                                           help_text="The employee changed their own access.")

    class Meta:
        model = HRMutation
        fields = ["mutation_id", "changed_by", "changed_for", "system", "access_level", "change_type",
                  "field_changed", "old_value", "new_value", "changed_at", "reason", "manager", "status",
                  "status_label", "changed_by_name", "changed_for_name", "self_change"]


class StatusHistorySerializer(serializers.Serializer):
    status = serializers.CharField()
    label = serializers.CharField()
    at = serializers.DateTimeField()
    by = serializers.CharField(help_text="Username, agent:<name> or system.")
    reason = serializers.CharField(allow_blank=True)


def mutation_payload(mutation: HRMutation, *, viewer) -> dict:
    """The case as `viewer` may see it (special-category fields masked for them)."""
    case = mutation.case
    claim = EmployeeClaim.objects.filter(request__mutation=mutation).select_related("colleague").order_by("-submitted_at").first()
    verdict = ManagerVerdict.objects.filter(request__mutation=mutation).select_related("decided_by").order_by("-decided_at").first()
    decision = case_final_decision(case)
    check = mutation.rights_checks.first()
    report = mutation.reports.first()
    return {
        "reference": case.reference,
        "case_status": case.status,
        "priority": case.priority,
        "assignee": case.assignee.username if case.assignee else None,
        "status": mutation.status,
        "status_label": mutation.status_label,
        "mutation": MutationOutputSerializer(mutation).data,
        "status_history": StatusHistorySerializer(selectors.mutation_status_history(mutation), many=True).data,
        "rights_check": RightsCheckOutputSerializer(check).data if check else None,
        "messages": MessageOutputSerializer(selectors.mutation_messages(case), many=True).data,
        "requests": RequestOutputSerializer(selectors.mutation_requests(mutation), many=True).data,
        "claim": ClaimOutputSerializer(claim, context={"viewer": viewer}).data if claim else None,
        "manager_verdict": VerdictOutputSerializer(verdict).data if verdict else None,
        "report": ReportOutputSerializer(report).data if report else None,
        "decision": {"outcome": decision.outcome, "reason": decision.reason,
                     "decided_by": decision.decided_by.username if decision.decided_by else None,
                     "decided_at": decision.decided_at} if decision else None,
    }


@extend_schema_serializer(component_name="AccessCase")
class AccessCaseSerializer(serializers.Serializer):
    reference = serializers.CharField()
    case_status = serializers.CharField()
    priority = serializers.CharField()
    assignee = serializers.CharField(allow_null=True)
    status = serializers.CharField(help_text="The access status (the seed's change_investigation).")
    status_label = serializers.CharField()
    mutation = MutationOutputSerializer()
    status_history = StatusHistorySerializer(many=True)
    rights_check = RightsCheckOutputSerializer(allow_null=True)
    messages = MessageOutputSerializer(many=True)
    requests = RequestOutputSerializer(many=True)
    claim = ClaimOutputSerializer(allow_null=True)
    manager_verdict = VerdictOutputSerializer(allow_null=True)
    report = ReportOutputSerializer(allow_null=True)
    decision = serializers.DictField(allow_null=True)


# --- submit a change --------------------------------------------------------------------------

class MutationSubmitApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="AccessMutationSubmitInput")
    class InputSerializer(serializers.Serializer):
        mutation_id = serializers.CharField(required=False, allow_blank=True, max_length=40,
                                            help_text="Your id for the change; one is made up when empty.")
        changed_by = serializers.CharField(help_text="Employee id (UserID) of who made the change.")
        changed_for = serializers.CharField(help_text="Employee id of whose access or data changed.")
        system = serializers.CharField()
        access_level = serializers.CharField(help_text="The access level the change needs on the system.")
        field_changed = serializers.CharField(max_length=80)
        change_type = serializers.ChoiceField(choices=HRMutation.ChangeType.choices, default="update")
        old_value = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
        new_value = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
        changed_at = serializers.DateTimeField()
        reason = serializers.CharField(required=False, allow_blank=True, default="")
        manager = serializers.CharField(required=False, allow_null=True, default=None,
                                        help_text="Employee id of the validating manager (default: the changer's).")

        validate_changed_by = staticmethod(_lookup(Employee, "employee_id", "employee"))
        validate_changed_for = staticmethod(_lookup(Employee, "employee_id", "employee"))
        validate_system = staticmethod(_lookup(System, "code__iexact", "system"))
        validate_access_level = staticmethod(_lookup(AccessLevel, "name__iexact", "access level"))

        def validate_manager(self, value):
            return _lookup(Employee, "employee_id", "employee")(value) if value else None

    @extend_schema(
        request=InputSerializer, responses={201: AccessCaseSerializer},
        description="Record a change under investigation. The case is created and its investigation starts.",
        examples=[OpenApiExample("Write access granted by a colleague", request_only=True, value={
            "mutation_id": "M-2001", "changed_by": "u014", "changed_for": "u021", "system": "FinanceApp",
            "access_level": "Admin", "field_changed": "Access level", "change_type": "update",
            "old_value": "Read", "new_value": "Write", "changed_at": "2025-11-10T09:14:00Z",
            "reason": "Month-end close"})],
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        mutation = services.mutation_submit(actor=request.user, **data.validated_data)
        mutation = selectors.mutation_for_case(mutation.case)
        return Response(mutation_payload(mutation, viewer=request.user), status=status.HTTP_201_CREATED)


class MutationDetailApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(responses=AccessCaseSerializer,
                   description="An access-change case: its status, the mutation, rights-check evidence, the "
                               "agent-to-agent messages in order, the requests to people and their answers, "
                               "the advisory report and the decision.")
    def get(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        mutation = selectors.mutation_for_case(case)
        if mutation is None:
            raise Http404("This case has no recorded access change.")
        return Response(mutation_payload(mutation, viewer=request.user))


# --- the employee's answer --------------------------------------------------------------------

class EmployeeAnswerApi(APIView):
    """No login: the token from the employee's link is the credential, and it works once."""

    permission_classes = [AllowAny]
    authentication_classes = []
    # Per IP, tighter than the anonymous rate: a token is guessed at nowhere near this speed.
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "signed_link"

    @extend_schema_serializer(component_name="AccessEmployeeAnswerInput")
    class InputSerializer(serializers.Serializer):
        token = serializers.CharField(help_text="The token from the employee's link (the part after /respond/).")
        claim_type = serializers.ChoiceField(choices=EmployeeClaim.ClaimType.choices)
        colleague = serializers.CharField(required=False, allow_null=True, default=None,
                                          help_text="Employee id of the colleague covered for.")
        period_start = serializers.DateField(required=False, allow_null=True, default=None)
        period_end = serializers.DateField(required=False, allow_null=True, default=None)
        explanation = serializers.CharField(max_length=4000)

        def validate_colleague(self, value):
            return _lookup(Employee, "employee_id", "employee")(value) if value else None

    @extend_schema_serializer(component_name="AccessEmployeeAnswerOutput")
    class OutputSerializer(serializers.Serializer):
        status = serializers.CharField()
        reference = serializers.CharField()
        message = serializers.CharField()

    @extend_schema(
        request=InputSerializer, responses={201: OutputSerializer}, auth=[],
        description="The employee explains the change. A forged token answers 400; a used, expired or "
                    "withdrawn one 410; nothing changes in either case.",
        examples=[OpenApiExample("Covered a colleague's sick leave", request_only=True, value={
            "token": "eyJyIjoxLCJuIjoi...:1tQk2x:abc", "claim_type": "sick_leave_cover", "colleague": "u012",
            "period_start": "2025-11-09", "period_end": "2025-11-12",
            "explanation": "Kees was ill during month-end close and asked me to grant the access."})],
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        claim = services.claim_submit(**data.validated_data)
        return Response({"status": "received", "reference": claim.request.mutation.case.reference,
                         "message": "Thank you. Your answer was recorded and is being checked."},
                        status=status.HTTP_201_CREATED)


# --- the manager's answer ---------------------------------------------------------------------

@extend_schema_serializer(component_name="AccessInboxItem")
class InboxItemSerializer(RequestOutputSerializer):
    """A manager cannot open the case: the item names it and carries the change's details."""

    reference = serializers.CharField(source="mutation.case.reference")
    mutation_id = serializers.CharField(source="mutation.mutation_id")
    change = MutationOutputSerializer(source="mutation")
    claim = serializers.SerializerMethodField()

    class Meta(RequestOutputSerializer.Meta):
        fields = ["reference", "mutation_id", *RequestOutputSerializer.Meta.fields, "change", "claim"]

    @extend_schema_field(ClaimOutputSerializer(allow_null=True))
    def get_claim(self, obj):
        claim = next((getattr(r, "claim", None) for r in obj.mutation.requests.all()
                      if hasattr(r, "claim")), None)
        # The manager this request is addressed to judges the claim: they see it whole.
        return ClaimOutputSerializer(claim, context={"addressed": True}).data if claim else None


class ManagerInboxApi(APIView):
    permission_classes = [IsManager]

    @extend_schema(responses=InboxItemSerializer(many=True),
                   description="The open validation requests addressed to the calling manager, each naming its "
                               "case (reference, mutation id) with the change's details and the employee's claim.")
    def get(self, request):
        return Response(InboxItemSerializer(selectors.inbox_for(request.user)["open"], many=True).data)


class ManagerAnswerApi(APIView):
    permission_classes = [IsManager]

    @extend_schema_serializer(component_name="AccessManagerAnswerInput")
    class InputSerializer(serializers.Serializer):
        approved = serializers.BooleanField()
        comment = serializers.CharField(max_length=4000)

    @extend_schema(
        request=InputSerializer, responses={201: VerdictOutputSerializer},
        description="Approve or deny the employee's validated claim. Only the manager the request is addressed "
                    "to may answer (403 otherwise); a second answer is refused with 409.",
        examples=[OpenApiExample("Approve", request_only=True,
                                 value={"approved": True, "comment": "Yes, I asked Priya to cover month-end."})],
    )
    def post(self, request, pk: int):
        req = selectors.request_get_for_manager(request.user, pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        verdict = services.verdict_submit(actor=request.user, request=req, **data.validated_data)
        return Response(VerdictOutputSerializer(verdict).data, status=status.HTTP_201_CREATED)

