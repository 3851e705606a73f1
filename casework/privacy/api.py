"""Legal holds, subject access and erasure through the API.

POST /api/legal-holds/ places a hold on a case (by reference) or an entity (by id);
POST /api/legal-holds/{id}/lift/ lifts it; POST /api/entities/{id}/subject-access/ returns the
zip of everything held about the subject; POST /api/erasure-requests/ asks for an erasure,
POST .../{id}/approve/ approves a bulk one, GET .../{id}/ shows it with its report. A case or an entity the person may not see is
answered as one that does not exist; a data-protection officer sees every one (their role is
their need-to-know: casework/privacy/subject.py)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.cases.models import Case
from casework.cases.selectors import case_get_for_user
from casework.cases.visibility import case_visible
from casework.entities.models import Entity
from casework.entities.selectors import entity_get_for_user
from casework.people.roles import is_data_protection
from casework.privacy import erasure, holds
from casework.privacy.models import ErasureRequest, LegalHold
from casework.privacy.subject import REASON_MAX_LENGTH, subject_access_export


@extend_schema_serializer(component_name="LegalHold")
class HoldOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    case = serializers.CharField(allow_null=True, help_text="The held case's reference; null for an entity hold.")
    entity = serializers.IntegerField(allow_null=True, help_text="The held entity's id; null for a case hold.")
    reason = serializers.CharField()
    placed_by = serializers.CharField()
    placed_at = serializers.DateTimeField()
    until = serializers.DateTimeField(allow_null=True, help_text="When it ends by itself; null: until lifted.")
    lifted_at = serializers.DateTimeField(allow_null=True)
    lift_reason = serializers.CharField()


def _output(hold: LegalHold) -> dict:
    return HoldOutputSerializer({
        "id": hold.pk, "case": hold.case.reference if hold.case_id else None, "entity": hold.entity_id,
        "reason": hold.reason, "placed_by": hold.placed_by.get_username(), "placed_at": hold.placed_at,
        "until": hold.until, "lifted_at": hold.lifted_at, "lift_reason": hold.lift_reason}).data


def _case(user, reference: str) -> Case:
    try:
        if is_data_protection(user):
            return get_object_or_404(Case, reference=reference.upper())
        return case_get_for_user(user, reference)
    except Http404:
        raise ValidationError({"case": f"No case {reference.upper()}."}) from None


def _entity(user, pk: int) -> Entity:
    """The entity, for whoever sees a case naming it (or a data-protection officer); else 404."""
    if is_data_protection(user):
        return get_object_or_404(Entity, pk=pk)
    return entity_get_for_user(user, pk)


class LegalHoldPlaceApi(APIView):
    """A lead of a team owning the case's type (or, for an entity, of any team), an admin or a
    data-protection officer holds a case or an entity from retention; audited."""

    permission_classes = [IsAuthenticated]

    @extend_schema_serializer(component_name="LegalHoldPlaceInput")
    class InputSerializer(serializers.Serializer):
        case = serializers.CharField(required=False, max_length=20, help_text="A case's reference.")
        entity = serializers.IntegerField(required=False, min_value=1, help_text="An entity's id.")
        reason = serializers.CharField(max_length=holds.REASON_MAX_LENGTH)
        until = serializers.DateTimeField(required=False, allow_null=True, help_text="Omit for open-ended.")

        def validate(self, data):
            if ("case" in data) == ("entity" in data):
                raise serializers.ValidationError("Give a case or an entity (one of them).")
            return data

    @extend_schema(request=InputSerializer, responses={201: HoldOutputSerializer},
                   examples=[OpenApiExample("Hold a case", request_only=True, value={
                       "case": "SUP-000001", "reason": "Litigation hold, matter 2030-17."})])
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        if "case" in values:
            target = {"case": _case(request.user, values["case"])}
        else:
            try:
                target = {"entity": _entity(request.user, values["entity"])}
            except Http404:
                raise ValidationError({"entity": f"No entity {values['entity']}."}) from None
        hold = holds.legal_hold_place(actor=request.user, reason=values["reason"], until=values.get("until"),
                                      **target)
        return Response(_output(hold), status=status.HTTP_201_CREATED)


class LegalHoldLiftApi(APIView):
    """Lift an open hold, with a reason; audited. 404 for a hold on a case or entity the person
    may not see."""

    permission_classes = [IsAuthenticated]

    @extend_schema_serializer(component_name="LegalHoldLiftInput")
    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=holds.REASON_MAX_LENGTH)

    @extend_schema(request=InputSerializer, responses=HoldOutputSerializer,
                   examples=[OpenApiExample("Lift", request_only=True, value={"reason": "Matter settled."})])
    def post(self, request, pk: int):
        hold = get_object_or_404(LegalHold.objects.select_related("case", "entity", "placed_by"), pk=pk)
        if not is_data_protection(request.user):
            if hold.case_id and not case_visible(request.user, hold.case):
                raise Http404("No such legal hold.")
            if hold.entity_id:
                entity_get_for_user(request.user, hold.entity_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        hold = holds.legal_hold_lift(actor=request.user, hold=hold, reason=data.validated_data["reason"])
        return Response(_output(hold))


class SubjectAccessApi(APIView):
    """Everything held about the entity's subject, as a zip (subject.json, report.json, the
    attachments' files); admins and data-protection officers only (403 for anyone else who sees
    the entity, 404 for whoever does not); audited with the request's reference, returned in
    the X-Subject-Access-Request header."""

    permission_classes = [IsAuthenticated]

    @extend_schema_serializer(component_name="SubjectAccessInput")
    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=REASON_MAX_LENGTH,
                                       help_text="Why: the subject's request, its date and channel.")

    @extend_schema(request=InputSerializer,
                   responses={(200, "application/zip"): OpenApiResponse(
                       response=OpenApiTypes.BINARY, description="subject.json, report.json and the files.")},
                   examples=[OpenApiExample("Request", request_only=True, value={
                       "reason": "Subject access request by e-mail, 2030-05-02."})])
    def post(self, request, pk: int):
        entity = _entity(request.user, pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        export = subject_access_export(actor=request.user, entity=entity, reason=data.validated_data["reason"])
        response = HttpResponse(export.content, content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
        response["X-Subject-Access-Request"] = export.request_ref
        return response


# --- erasure of a data subject ---------------------------------------------------------------

@extend_schema_serializer(component_name="ErasureRequest")
class ErasureOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    reference = serializers.CharField(help_text="ERA-<id>: what the audit trail's tombstones name.")
    status = serializers.ChoiceField(choices=ErasureRequest.Status.choices)
    reason = serializers.CharField(help_text="Pseudonymised like the rest once the erasure has run.")
    subjects = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()),
                                     help_text="Per subject, the ids of the entities naming them.")
    four_eyes = serializers.BooleanField(help_text="Bulk: a second, different person approves before it runs.")
    case_count = serializers.IntegerField()
    requested_by = serializers.CharField()
    requested_at = serializers.DateTimeField()
    approved_by = serializers.CharField(allow_null=True)
    approved_at = serializers.DateTimeField(allow_null=True)
    cursor = serializers.IntegerField(help_text="Cases of the plan done (a resumed run continues here).")
    batches = serializers.IntegerField()
    error = serializers.CharField()
    finished_at = serializers.DateTimeField(allow_null=True)
    report = serializers.JSONField(help_text="Per case what happened and why; per model the rows and fields "
                                             "changed; what was removed, kept and why. Never the data.")


def _erasure_output(request: ErasureRequest) -> dict:
    return ErasureOutputSerializer({
        "id": request.pk, "reference": request.reference, "status": request.status, "reason": request.reason,
        "subjects": request.subjects, "four_eyes": request.four_eyes, "case_count": request.case_count,
        "requested_by": request.requested_by.get_username(), "requested_at": request.requested_at,
        "approved_by": request.approved_by.get_username() if request.approved_by_id else None,
        "approved_at": request.approved_at, "cursor": request.cursor, "batches": request.batches,
        "error": request.error, "finished_at": request.finished_at, "report": request.report}).data


def _erasure_get(user, pk: int) -> ErasureRequest:
    """A request, for an admin or a data-protection officer; a 404 for anyone else."""
    if not is_data_protection(user):
        raise Http404("No such erasure request.")
    return get_object_or_404(ErasureRequest.objects.select_related("requested_by", "approved_by"), pk=pk)


class ErasureRequestApi(APIView):
    """Ask for the erasure of one or more data subjects, each named by the entities that name
    them (their customer id, account, card, e-mail address); admins and data-protection officers
    only (403 for anyone else), with a reason. One subject in few cases runs at once in the
    background; bulk waits for a second person's approval. The report says what changed and
    what was kept, and why."""

    permission_classes = [IsAuthenticated]

    @extend_schema_serializer(component_name="ErasureRequestInput")
    class InputSerializer(serializers.Serializer):
        subjects = serializers.ListField(
            child=serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=1,
                                        max_length=erasure.MAX_ENTITIES_PER_SUBJECT),
            min_length=1, max_length=erasure.MAX_SUBJECTS,
            help_text="Per subject, the ids of the entities naming them; more than one subject is bulk.")
        reason = serializers.CharField(max_length=erasure.REASON_MAX_LENGTH,
                                       help_text="Why: the subject's request, its date and channel.")

    @extend_schema(request=InputSerializer, responses={201: ErasureOutputSerializer},
                   examples=[OpenApiExample("One customer", request_only=True, value={
                       "subjects": [[12, 13]], "reason": "Erasure request by e-mail, 2030-05-02."})])
    def post(self, request):
        if not is_data_protection(request.user):
            raise PermissionDenied("Only admins and data-protection officers may ask for an erasure.")
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        made = erasure.erasure_request(actor=request.user, subjects=data.validated_data["subjects"],
                                       reason=data.validated_data["reason"])
        made = ErasureRequest.objects.select_related("requested_by", "approved_by").get(pk=made.pk)
        return Response(_erasure_output(made), status=status.HTTP_201_CREATED)


class ErasureRequestDetailApi(APIView):
    """One erasure request with its report; 404 for anyone but admins and data-protection officers."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=ErasureOutputSerializer)
    def get(self, request, pk: int):
        return Response(_erasure_output(_erasure_get(request.user, pk)))


class ErasureRequestApproveApi(APIView):
    """The second person's approval of a bulk request, which then runs; 403 for the person who
    asked, 400 for a request not awaiting approval."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=ErasureOutputSerializer)
    def post(self, request, pk: int):
        made = erasure.erasure_approve(actor=request.user, request=_erasure_get(request.user, pk))
        made = ErasureRequest.objects.select_related("requested_by", "approved_by").get(pk=made.pk)
        return Response(_erasure_output(made))


class ErasureRequestResumeApi(APIView):
    """Start again a request whose run failed or whose worker died: it continues at its cursor
    (audited, `erasure.resumed`); 400 for a request done or awaiting approval. A beat task does
    the same by itself for a request without progress (ERASURE_STALE_AFTER_SECONDS)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=ErasureOutputSerializer)
    def post(self, request, pk: int):
        made = erasure.erasure_resume(actor=request.user, request=_erasure_get(request.user, pk))
        made = ErasureRequest.objects.select_related("requested_by", "approved_by").get(pk=made.pk)
        return Response(_erasure_output(made))
