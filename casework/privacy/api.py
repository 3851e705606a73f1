"""Legal holds and subject access through the API.

POST /api/legal-holds/ places a hold on a case (by reference) or an entity (by id);
POST /api/legal-holds/{id}/lift/ lifts it; POST /api/entities/{id}/subject-access/ returns the
zip of everything held about the subject. A case or an entity the person may not see is
answered as one that does not exist; a data-protection officer sees every one (their role is
their need-to-know: casework/privacy/subject.py)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
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
from casework.privacy import holds
from casework.privacy.models import LegalHold
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
