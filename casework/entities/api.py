"""Entities API: an entity with its cases, a case's related cases, linking and merging."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.cases.api import IsInvestigator
from casework.cases.selectors import case_get_for_user
from casework.entities import selectors, services
from casework.entities.models import CaseLink
from casework.entities.services import REASON_MAX


def _other(request, reference: str, field: str):
    try:
        return case_get_for_user(request.user, reference)
    except Http404:
        raise ValidationError({field: f"No case {reference.upper()}."}) from None


class EntityDetailApi(APIView):
    """An entity (kind, display, whether fraud was confirmed) and its newest cases the person
    may see; audited. 404 when no case they may see names it."""

    permission_classes = [IsInvestigator]

    @extend_schema(responses={200: dict})
    def get(self, request, pk: int):
        entity = selectors.entity_get_for_user(request.user, pk)
        services.entity_viewed(actor=request.user, entity=entity, what="api")
        page = selectors.entity_page(entity, viewer=request.user)
        return Response({
            "id": entity.pk, "kind": entity.kind, "display": entity.display,
            "confirmed_fraud": entity.confirmed_fraud,
            "confirmed_fraud_case": entity.confirmed_fraud_case.reference if entity.confirmed_fraud_case else None,
            # Counted up to selectors.COUNT_CAP; case_count_complete False: more than that.
            "case_count": page.total, "case_count_complete": page.counted_all,
            "cases": [selectors.case_summary(c) | {"named_in": c.named_in} for c in page.cases],
        })


class CaseRelatedApi(APIView):
    """The cases linked to this one, and the other cases naming its entities."""

    permission_classes = [IsInvestigator]

    @extend_schema(responses={200: dict})
    def get(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        return Response(selectors.related_cases(case, viewer=request.user))


class CaseLinkApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseLinkInput")
    class InputSerializer(serializers.Serializer):
        to = serializers.CharField(max_length=20, help_text="The other case's reference.")
        kind = serializers.ChoiceField(choices=CaseLink.Kind.choices)
        reason = serializers.CharField(max_length=REASON_MAX)

    @extend_schema(request=InputSerializer, responses={201: dict},
                   description="Link this case to another (related, duplicate of, parent of), with a reason.",
                   examples=[OpenApiExample("Related", value={"to": "FRA-000002", "kind": "related",
                                                               "reason": "Same device."}, request_only=True)])
    def post(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        other = _other(request, data.validated_data["to"], "to")
        link = services.case_link(actor=request.user, from_case=case, to_case=other,
                                  kind=data.validated_data["kind"], reason=data.validated_data["reason"])
        return Response({"from": case.reference, "to": other.reference, "kind": link.kind, "reason": link.reason,
                         "created_by": request.user.get_username(), "created_at": link.created_at},
                        status=status.HTTP_201_CREATED)


class CaseMergeApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseMergeInput")
    class InputSerializer(serializers.Serializer):
        into = serializers.CharField(max_length=20, help_text="The reference of the case that survives.")
        reason = serializers.CharField(max_length=REASON_MAX)

    @extend_schema(request=InputSerializer, responses={201: dict},
                   description="Merge this case (a duplicate) into another of the same type. The decider's "
                               "role only; the merged case is closed and cannot be merged back.")
    def post(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        survivor = _other(request, data.validated_data["into"], "into")
        merge = services.case_merge(actor=request.user, merged=case, survivor=survivor,
                                    reason=data.validated_data["reason"])
        return Response({"merged": case.reference, "survivor": survivor.reference, "reason": merge.reason,
                         "moved": merge.moved, "merged_by": request.user.get_username(),
                         "merged_at": merge.merged_at}, status=status.HTTP_201_CREATED)
