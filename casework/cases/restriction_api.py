"""Restricting a case through the API: POST names the people (and why), DELETE lifts it."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.cases import restriction, selectors
from casework.cases.api import IsInvestigator
from casework.cases.visibility import user_leads


@extend_schema_serializer(component_name="CaseRestriction")
class RestrictionOutputSerializer(serializers.Serializer):
    reference = serializers.CharField()
    restricted = serializers.BooleanField()
    people = serializers.ListField(child=serializers.CharField(), help_text="Usernames the case is shown to "
                                   "(besides admins); empty when it is not restricted.")


def _output(case) -> dict:
    people = [p.get_username() for p in restriction.case_restricted_to(case)] if case.restricted else []
    return RestrictionOutputSerializer({"reference": case.reference, "restricted": case.restricted,
                                        "people": people}).data


class CaseRestrictionApi(APIView):
    """A lead of a team owning the case's type (or an admin) restricts the case to named people;
    403 for anyone else who sees it, 404 for whoever does not."""

    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseRestrictInput")
    class InputSerializer(serializers.Serializer):
        people = serializers.ListField(
            child=serializers.CharField(max_length=150), max_length=restriction.PEOPLE_MAX, allow_empty=True,
            help_text="Usernames of the people to show the case to; you are always among them.")
        reason = serializers.CharField(max_length=restriction.REASON_MAX_LENGTH)

        def validate_people(self, value):
            found = {u.username: u for u in User.objects.filter(username__in=value)}
            unknown = sorted(set(value) - set(found))
            if unknown:
                raise serializers.ValidationError(f"No user named {', '.join(map(repr, unknown))}.")
            return list(found.values())

    @extend_schema_serializer(component_name="CaseUnrestrictInput")
    class DeleteSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=restriction.REASON_MAX_LENGTH)

    @extend_schema(request=InputSerializer, responses=RestrictionOutputSerializer,
                   description="Restrict the case to the named people (or change their list). Removing the "
                               "assignee from the list unassigns them.",
                   examples=[OpenApiExample("Restrict", request_only=True, value={
                       "people": ["alice", "rita"], "reason": "Investigation of a colleague."})])
    def post(self, request, reference: str):
        case = _lead_case(request.user, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        case = restriction.case_restrict(actor=request.user, case=case, **data.validated_data)
        return Response(_output(case))

    @extend_schema(request=DeleteSerializer, responses=RestrictionOutputSerializer,
                   description="Lift the restriction: the case is its teams' again.",
                   examples=[OpenApiExample("Lift", request_only=True, value={"reason": "Investigation closed."})])
    def delete(self, request, reference: str):
        case = _lead_case(request.user, reference)
        # The reason in the body, or as ?reason= for clients that send no body with a DELETE.
        data = self.DeleteSerializer(data=request.data or request.query_params)
        data.is_valid(raise_exception=True)
        case = restriction.case_unrestrict(actor=request.user, case=case, **data.validated_data)
        return Response(_output(case))


def _lead_case(user, reference: str):
    """The case, for someone who leads a team owning it (or an admin): 404 if they may not see
    it, 403 before anything they sent is read if they may see it but not restrict it."""
    case = selectors.case_get_for_user(user, reference)
    if not user_leads(user, case):
        raise PermissionDenied("Only a lead of a team that owns this case type, or an admin, restricts it.")
    return case
