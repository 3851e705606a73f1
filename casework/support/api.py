"""Support API: one view per operation, the same rules as the pages (investigators only).

POST /api/support/messages/                     a customer's message: 202 with the intake run, and the
                                                ticket and case once it has one
GET  /api/support/intake/<run_id>/              the intake: status, then its ticket and case
GET  /api/support/tickets/<ticket_id>/          a ticket with its customer, thread and latest triage
POST /api/support/tickets/<ticket_id>/reply/    send the (edited) reply: decision `replied`
POST /api/support/tickets/<ticket_id>/escalate/ decision `escalated`
POST /api/support/tickets/<ticket_id>/close/    decision `no_action`
A second decision on a ticket answers 409.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.models import AgentRun
from casework.cases.api import IsInvestigator
from casework.cases.selectors import case_final_decision
from casework.cases.visibility import case_visible
from casework.support import selectors, services
from casework.support.models import Ticket, TicketMessage
from casework.support.tickets import MESSAGE_MAX_LENGTH


@extend_schema_serializer(component_name="SupportError")
class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField(required=False)


ERRORS = {
    400: OpenApiResponse(description="Invalid input, keyed by field, e.g. {\"message\": [\"The message is empty.\"]}."),
    401: OpenApiResponse(ErrorSerializer, description="Not authenticated."),
    403: OpenApiResponse(ErrorSerializer, description="Not an investigator."),
}
NOT_FOUND = {404: OpenApiResponse(ErrorSerializer, description="No such ticket (or intake run).")}
CONFLICT = {409: OpenApiResponse(ErrorSerializer, description="The ticket's case is already decided (a second "
                                                              "send, escalation or close).",
                                 examples=[OpenApiExample("Double send", status_codes=["409"], value={
                                     "detail": "SUP-000012 was already closed by alice at 2026-11-23 17:20 UTC.",
                                     "code": "already_closed"})])}


# --- output -----------------------------------------------------------------------------

@extend_schema_serializer(component_name="SupportTicketMessage")
class MessageOutputSerializer(serializers.ModelSerializer):
    sent_by = serializers.CharField(source="sent_by.username", default=None, allow_null=True)
    email_state = serializers.SerializerMethodField(
        help_text="A reply's email: queued (also while it is retried), sent, failed; null when nothing is emailed "
                  "(a customer's message, or a customer with no address).")
    emailed_at = serializers.DateTimeField(source="email.sent_at", default=None, allow_null=True,
                                           help_text="When the mail server accepted the reply's email.")
    email_error = serializers.CharField(source="email.last_error", default=None, allow_null=True,
                                        help_text="The last attempt's failure (the server's answer), if any.")

    class Meta:
        model = TicketMessage
        fields = ["direction", "text", "text_en", "channel", "sent_by", "auto_sent", "created_at",
                  "email_message_id", "email_state", "emailed_at", "email_error"]

    def get_email_state(self, obj) -> str | None:
        if obj.email is None:
            return None
        return "queued" if obj.email.is_pending else obj.email.state


@extend_schema_serializer(component_name="SupportTicket")
class TicketOutputSerializer(serializers.ModelSerializer):
    reference = serializers.CharField(source="case.reference")
    case_status = serializers.CharField(source="case.status")
    thread_id = serializers.CharField()
    customer = serializers.SerializerMethodField()
    messages = MessageOutputSerializer(many=True)
    triage = serializers.JSONField(help_text="The latest triage: result (TriageResult), supervisor "
                                             "(SupervisorDecision), translation, route, kb_results, failures, guards.")
    decision = serializers.SerializerMethodField()

    class Meta:
        model = Ticket
        fields = ["ticket_id", "thread_id", "reference", "case_status", "lifecycle", "channel", "language", "urgency",
                  "ticket_type", "recommended_action", "suggested_reply", "customer", "messages", "triage",
                  "decision", "created_at", "triaged_at", "first_response_at", "completed_at"]

    def get_customer(self, obj) -> dict:
        return obj.customer.as_lookup()

    def get_decision(self, obj) -> dict | None:
        decision = case_final_decision(obj.case)
        if decision is None:
            return None
        return {"outcome": decision.outcome, "reason": decision.reason, "decided_at": decision.decided_at,
                "decided_by": decision.decided_by.username if decision.decided_by else None}


@extend_schema_serializer(component_name="SupportIntake")
class IntakeOutputSerializer(serializers.Serializer):
    intake_run = serializers.IntegerField()
    status = serializers.CharField(help_text="The intake run's status: queued, running, completed, failed.")
    customer_id = serializers.CharField()
    ticket_id = serializers.CharField(allow_null=True, help_text="Set once the message has its ticket.")
    reference = serializers.CharField(allow_null=True, help_text="The ticket's case (SUP-...), once known.")
    matched = serializers.BooleanField(allow_null=True, help_text="True: appended to an active ticket.")
    status_url = serializers.CharField()


def intake_payload(request, run: AgentRun) -> dict:
    from django.urls import reverse

    # A message that joined a ticket its sender may not see names no ticket or case to them.
    shown = bool(run.case_id) and case_visible(request.user, run.case)
    ticket = Ticket.objects.filter(case_id=run.case_id).first() if shown else None
    return {"intake_run": run.pk, "status": run.status, "customer_id": run.state.get("input_customer_id", ""),
            "ticket_id": ticket.ticket_id if ticket else None,
            "reference": run.case.reference if shown else None,
            "matched": run.state.get("matched") if ticket else None,
            "status_url": request.build_absolute_uri(reverse("api-support-intake", args=[run.pk]))}


# --- views ------------------------------------------------------------------------------

class MessageReceiveApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="SupportMessageInput")
    class InputSerializer(serializers.Serializer):
        customer_id = serializers.CharField(max_length=40)
        message = serializers.CharField(max_length=MESSAGE_MAX_LENGTH, trim_whitespace=True)
        channel = serializers.CharField(max_length=20, required=False, default="api")

    @extend_schema(
        request=InputSerializer,
        responses={202: OpenApiResponse(IntakeOutputSerializer, description="Accepted: the message is matched to "
                                        "the customer's active tickets or opens a new one, then triaged. ticket_id "
                                        "and reference are set when that is done already; otherwise poll status_url."),
                   **ERRORS},
        description="A customer's message arrives.",
        examples=[
            OpenApiExample("A billing question", request_only=True, value={
                "customer_id": "CUST-001", "message": "We were charged twice for the March invoice.",
                "channel": "email"}),
            OpenApiExample("Accepted", response_only=True, status_codes=["202"], value={
                "intake_run": 41, "status": "completed", "customer_id": "CUST-001", "ticket_id": "TKT-7Q2M9K4D",
                "reference": "SUP-000012", "matched": False,
                "status_url": "https://casework.example/api/support/intake/41/"}),
            OpenApiExample("Unknown customer", response_only=True, status_codes=["400"],
                           value={"customer_id": ["No customer 'CUST-999'."]}),
        ],
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run = services.message_receive(actor=request.user, **data.validated_data)
        run = AgentRun.objects.select_related("case").get(pk=run.pk)
        return Response(intake_payload(request, run), status=status.HTTP_202_ACCEPTED)


class IntakeDetailApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(responses={200: IntakeOutputSerializer, **ERRORS, **NOT_FOUND},
                   description="Where a message went: its intake run's status, then its ticket and case.")
    def get(self, request, run_id: int):
        run = AgentRun.objects.select_related("case").filter(pk=run_id, pipeline=services.PIPELINE,
                                                             mode="intake").first()
        # An intake whose ticket's case this person may not see is answered as a missing one.
        if run is None or (run.case_id and not case_visible(request.user, run.case)):
            raise Http404("No such intake.")
        return Response(intake_payload(request, run))


def _ticket(request, ticket_id: str) -> Ticket:
    return selectors.ticket_get_for_user(request.user, ticket_id)


class TicketDetailApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(responses={200: TicketOutputSerializer, **ERRORS, **NOT_FOUND},
                   description="A ticket with its customer, thread (original and English) and latest triage.",
                   examples=[OpenApiExample("A routed Spanish ticket", response_only=True, status_codes=["200"], value={
                       "ticket_id": "TKT-7Q2M9K4D", "thread_id": "CUST-005:TKT-7Q2M9K4D", "reference": "SUP-000012",
                       "case_status": "awaiting_decision", "lifecycle": "routed", "channel": "email", "language": "es",
                       "urgency": "medium", "ticket_type": "billing", "recommended_action": "route_specialist",
                       "suggested_reply": "Hola Lucía: ...",
                       "customer": {"customer_id": "CUST-005", "name": "Lucía Romero", "plan": "pro",
                                    "tenure_months": 14, "seats": 3, "region": "latam", "vip": False},
                       "messages": [{"direction": "customer", "text": "Hola, me cobraron dos veces este mes.",
                                     "text_en": "Hello, I was charged twice this month.", "channel": "email",
                                     "sent_by": None, "auto_sent": False, "created_at": "2026-11-23T17:14:26Z"}],
                       "triage": {"run": 41, "route": "billing",
                                  "supervisor": {"urgency": "medium", "ticket_type": "billing",
                                                 "reasoning": "Pro customer, billing error.",
                                                 "requires_escalation": False},
                                  "kb_results": [{"id": "kb_001", "title": "Resolving double charges",
                                                  "category": "billing", "score": 0.75, "snippet": "..."}],
                                  "result": {"urgency": "medium", "recommended_action": "route_specialist",
                                             "extracted_info": {"product_area": "billing",
                                                                "issue_type": "billing_error",
                                                                "sentiment": "frustrated", "language": "es"},
                                             "suggested_response": "Hola Lucía: ...",
                                             "relevant_articles": ["kb_001"],
                                             "reasoning": "Needs a specialist to check the charges."},
                                  "failures": [], "guards": []},
                       "decision": None, "created_at": "2026-11-23T17:14:26Z", "triaged_at": "2026-11-23T17:14:27Z",
                       "first_response_at": None, "completed_at": None})])
    def get(self, request, ticket_id: str):
        return Response(TicketOutputSerializer(_ticket(request, ticket_id)).data)


class TicketReplyApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="SupportReplyInput")
    class InputSerializer(serializers.Serializer):
        body = serializers.CharField(max_length=MESSAGE_MAX_LENGTH,
                                     help_text="The reply as sent (the suggested reply, edited or not).")

    @extend_schema(request=InputSerializer, responses={200: TicketOutputSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
                   description="Send the reply and close the case as `replied`.",
                   examples=[OpenApiExample("Reply", request_only=True, value={
                       "body": "Hello Ana,\n\nThe duplicate charge is refunded within 5 business days."})])
    def post(self, request, ticket_id: str):
        ticket = _ticket(request, ticket_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.ticket_reply(actor=request.user, ticket=ticket, **data.validated_data)
        return Response(TicketOutputSerializer(selectors.ticket_get_for_user(request.user, ticket_id)).data)


class _ReasonApi(APIView):
    permission_classes = [IsInvestigator]
    action = None

    @extend_schema_serializer(component_name="SupportReasonInput")
    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=5000)

    def post(self, request, ticket_id: str):
        ticket = _ticket(request, ticket_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        type(self).action(actor=request.user, ticket=ticket, **data.validated_data)
        return Response(TicketOutputSerializer(selectors.ticket_get_for_user(request.user, ticket_id)).data)


class TicketEscalateApi(_ReasonApi):
    action = services.ticket_escalate

    @extend_schema(request=_ReasonApi.InputSerializer,
                   responses={200: TicketOutputSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
                   description="Escalate the ticket (decision `escalated`).",
                   examples=[OpenApiExample("Escalate", request_only=True,
                                            value={"reason": "Legal threat; passed to the account manager."})])
    def post(self, request, ticket_id: str):
        return super().post(request, ticket_id)


class TicketCloseApi(_ReasonApi):
    action = services.ticket_close_no_action

    @extend_schema(request=_ReasonApi.InputSerializer,
                   responses={200: TicketOutputSerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
                   description="Close the ticket with no action (decision `no_action`).",
                   examples=[OpenApiExample("Close", request_only=True,
                                            value={"reason": "The customer solved it themselves."})])
    def post(self, request, ticket_id: str):
        return super().post(request, ticket_id)
