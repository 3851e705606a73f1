"""Allow and deny lists over the API: read them, make one, add or remove entries. The same
services as the admin, so the same checks and the same audit."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.api_errors import JSONObjectParser
from casework.people.roles import ADMIN, INVESTIGATOR, MANAGER, RELEASE_MANAGER, user_roles
from casework.transactions.lists import services
from casework.transactions.lists.models import ListEntry, ValueList

E400 = OpenApiResponse(description="Invalid input, keyed by field.")
E403 = OpenApiResponse(description="Investigators, managers and admins change lists.")
E404 = OpenApiResponse(description="No such list (or no such entry).")


class ListEntrySerializer(serializers.ModelSerializer):
    added_by = serializers.CharField(source="added_by.username", default=None, allow_null=True)
    active = serializers.SerializerMethodField(help_text="False once expired: an expired entry does not match.")

    class Meta:
        model = ListEntry
        fields = ["value", "expires_at", "active", "note", "added_by", "added_at"]

    def get_active(self, obj) -> bool:
        return obj.active_at(self.context.get("now") or timezone.now())


class ValueListSerializer(serializers.ModelSerializer):
    entries = serializers.IntegerField(source="entry_count", read_only=True, help_text="Unexpired entries.")

    class Meta:
        model = ValueList
        fields = ["name", "kind", "field", "description", "entries", "created_at"]


class ValueListInSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=60)
    kind = serializers.ChoiceField(choices=ValueList.Kind.choices)
    field = serializers.ChoiceField(choices=ValueList.Field.choices)
    description = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


class ListEntryInSerializer(serializers.Serializer):
    value = serializers.CharField(max_length=254, help_text="An e-mail given in clear is stored as its hash.")
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    note = serializers.CharField(required=False, allow_blank=True, max_length=500, default="")


class ListEntryRemoveSerializer(serializers.Serializer):
    value = serializers.CharField(max_length=254)


def _may_change(user) -> None:
    if not user_roles(user) & {INVESTIGATOR, RELEASE_MANAGER, MANAGER, ADMIN}:
        raise PermissionDenied("Investigators, managers and admins change lists.")


def _lists():
    now = timezone.now()
    return ValueList.objects.annotate(entry_count=Count(
        "entries", filter=Q(entries__expires_at__isnull=True) | Q(entries__expires_at__gt=now)))


class ValueListApi(APIView):
    parser_classes = [JSONObjectParser]

    @extend_schema(operation_id="txn_lists_list", responses={200: ValueListSerializer(many=True)})
    def get(self, request):
        return Response(ValueListSerializer(_lists(), many=True).data)

    @extend_schema(operation_id="txn_lists_create", request=ValueListInSerializer,
                   responses={201: ValueListSerializer, 400: E400, 403: E403},
                   description="Make an allow or deny list of one field's values (card, email_hash, ip, device, "
                               "merchant, bin).")
    def post(self, request):
        _may_change(request.user)
        data = ValueListInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        value_list = services.value_list_create(actor=request.user, **data.validated_data)
        return Response(ValueListSerializer(_lists().get(pk=value_list.pk)).data, status=status.HTTP_201_CREATED)


class ListEntriesApi(APIView):
    parser_classes = [JSONObjectParser]

    @extend_schema(operation_id="txn_list_entries", responses={200: ListEntrySerializer(many=True), 404: E404})
    def get(self, request, name: str):
        value_list = get_object_or_404(ValueList, name=name)
        entries = value_list.entries.select_related("added_by").order_by("value")[:1000]
        return Response(ListEntrySerializer(entries, many=True, context={"now": timezone.now()}).data)

    @extend_schema(operation_id="txn_list_entries_add", request=ListEntryInSerializer,
                   responses={201: ListEntrySerializer, 400: E400, 403: E403, 404: E404},
                   description="Put a value on the list, with an optional expiry (an entry already there gets "
                               "the new expiry and note). Audited. A deny entry blocks the next transaction that "
                               "carries the value.")
    def post(self, request, name: str):
        _may_change(request.user)
        value_list = get_object_or_404(ValueList, name=name)
        data = ListEntryInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        entry = services.list_entry_add(actor=request.user, value_list=value_list, **data.validated_data)
        return Response(ListEntrySerializer(entry).data, status=status.HTTP_201_CREATED)


class ListEntryRemoveApi(APIView):
    parser_classes = [JSONObjectParser]

    @extend_schema(operation_id="txn_list_entries_remove", request=ListEntryRemoveSerializer,
                   responses={204: None, 400: E400, 403: E403, 404: E404,
                              409: OpenApiResponse(description="The value is not on the list (code not_listed).")},
                   description="Take a value off the list. Audited.")
    def post(self, request, name: str):
        _may_change(request.user)
        value_list = get_object_or_404(ValueList, name=name)
        data = ListEntryRemoveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.list_entry_remove(actor=request.user, value_list=value_list, value=data.validated_data["value"])
        return Response(status=status.HTTP_204_NO_CONTENT)
