"""Saved views API: list and save, read, change (rename, share, pin, filters), delete."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.cases.api import IsInvestigator
from casework.cases.saved_views import selectors, services
from casework.cases.saved_views.models import SavedView
from casework.people.models import Team


class SavedViewOutputSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username")
    team = serializers.CharField(source="team.name", default=None, allow_null=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = SavedView
        fields = ["id", "name", "query", "owner", "team", "everyone", "pinned", "url", "created_at", "updated_at"]

    def get_url(self, view) -> str:
        return f"/cases/?{view.query}" if view.query else "/cases/"


@extend_schema_serializer(component_name="SavedViewInput")
class SavedViewInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=80)
    query = serializers.CharField(max_length=1000, allow_blank=True, required=False, default="",
                                  help_text="The queue's filters as a query string, e.g. `assignee=me&priority=high`.")
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all(), allow_null=True,
                                        required=False, default=None, help_text="A team you are in, by name.")
    everyone = serializers.BooleanField(required=False, default=False)
    pinned = serializers.BooleanField(required=False, default=False)


EXAMPLE = OpenApiExample("My urgent cases", request_only=True,
                         value={"name": "My urgent", "query": "assignee=me&priority=critical", "pinned": True})


class SavedViewListApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="saved_views_list", responses=SavedViewOutputSerializer(many=True))
    def get(self, request):
        views = selectors.saved_views_visible(request.user)
        return Response(SavedViewOutputSerializer(views, many=True).data)

    @extend_schema(operation_id="saved_views_create", request=SavedViewInputSerializer,
                   responses={201: SavedViewOutputSerializer,
                              400: OpenApiResponse(description="A missing or invalid field, named.")},
                   examples=[EXAMPLE])
    def post(self, request):
        data = SavedViewInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        view = services.saved_view_create(actor=request.user, **data.validated_data)
        return Response(SavedViewOutputSerializer(view).data, status=status.HTTP_201_CREATED)


class SavedViewDetailApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="saved_views_retrieve", responses=SavedViewOutputSerializer)
    def get(self, request, pk: int):
        return Response(SavedViewOutputSerializer(selectors.saved_view_get_for_user(request.user, pk)).data)

    @extend_schema(operation_id="saved_views_update", request=SavedViewInputSerializer(partial=True),
                   responses={200: SavedViewOutputSerializer,
                              403: OpenApiResponse(description="Only the owner changes a view.")})
    def patch(self, request, pk: int):
        view = selectors.saved_view_get_for_user(request.user, pk, own=True)
        data = SavedViewInputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        view = services.saved_view_update(actor=request.user, view=view, **data.validated_data)
        return Response(SavedViewOutputSerializer(view).data)

    @extend_schema(operation_id="saved_views_destroy", responses={204: None})
    def delete(self, request, pk: int):
        view = selectors.saved_view_get_for_user(request.user, pk, own=True)
        services.saved_view_delete(actor=request.user, view=view)
        return Response(status=status.HTTP_204_NO_CONTENT)
