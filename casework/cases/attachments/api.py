"""Attachments API: list and upload (multipart) on one path, download on another."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.cases.api import IsInvestigator
from casework.cases.attachments import selectors, services
from casework.cases.attachments.filetypes import KNOWN
from casework.cases.attachments.http import file_response, refuse_oversized_body
from casework.cases.attachments.models import Attachment
from casework.cases.masking import masked_for
from casework.cases.selectors import case_get_for_user


class AttachmentOutputSerializer(serializers.ModelSerializer):
    uploaded_by = serializers.CharField(source="uploaded_by.username", default=None, allow_null=True,
                                        help_text="Null for a file that came attached to an email (received_from).")
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Attachment
        ref_name = "CaseAttachment"
        fields = ["id", "original_name", "size", "sha256", "content_type", "uploaded_by", "received_from", "uploaded_at",
                  "download_url"]

    def to_representation(self, attachment):
        # The sender's full address is special-category: whole for the owning teams only
        # (casework/cases/masking.py); no viewer in the context: masked.
        data = super().to_representation(attachment)
        data["received_from"] = masked_for(self.context.get("viewer"), attachment.case.case_type, "email",
                                           data["received_from"])
        return data

    def get_download_url(self, attachment) -> str:
        return f"/api/cases/{attachment.case.reference}/attachments/{attachment.pk}/download/"


class AttachmentListApi(APIView):
    """GET: the case's evidence files, newest first. POST (multipart/form-data, field `file`): attach one."""

    permission_classes = [IsInvestigator]
    parser_classes = [MultiPartParser]

    @extend_schema_serializer(component_name="CaseAttachmentUpload")
    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(allow_empty_file=True, help_text="The evidence file (see ATTACHMENT_EXTENSIONS).")

    @extend_schema(operation_id="case_attachments_list", responses=AttachmentOutputSerializer(many=True))
    def get(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        return Response(AttachmentOutputSerializer(selectors.attachment_list(case), many=True,
                                                   context={"viewer": request.user}).data)

    @extend_schema(
        operation_id="case_attachments_upload", request={"multipart/form-data": InputSerializer},
        responses={201: AttachmentOutputSerializer,
                   400: OpenApiResponse(description="No file, an empty one, or a refused type (named)."),
                   409: OpenApiResponse(description="The case is closed."),
                   413: OpenApiResponse(description="Over ATTACHMENT_MAX_BYTES (the limit is named).")},
        description="Attach an evidence file. Its SHA-256 is on the answer and in the audit entry.",
    )
    def post(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        refuse_oversized_body(request)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        attachment = services.attachment_upload(actor=request.user, case=case, upload=data.validated_data["file"])
        return Response(AttachmentOutputSerializer(attachment, context={"viewer": request.user}).data, status=status.HTTP_201_CREATED)


# A file is served as the type its extension gives (filetypes.KNOWN), so each is a documented
# 200; a .json file's body is any JSON. The PDF comes first: a client generator that takes one
# type per response reads bytes then, not text.
_DOWNLOADS = {
    (200, content_type): OpenApiResponse(OpenApiTypes.ANY if content_type == "application/json" else
                                         OpenApiTypes.BINARY,
                                         description="The file as stored, in the type its extension gives.")
    for content_type in dict.fromkeys(content_type for content_type, _ in KNOWN.values())
}


class AttachmentDownloadApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="case_attachments_download",
                   responses={**_DOWNLOADS,
                              409: OpenApiResponse(
                                  description="The stored file no longer matches its recorded SHA-256, or is missing.",
                                  response=inline_serializer("FileAlteredError", {
                                      "detail": serializers.CharField(), "code": serializers.CharField()}))},
                   description="The file as stored (Content-Disposition: attachment; X-Evidence-SHA256 gives its "
                               "hash). Served with the type its extension gives. The stored bytes are hashed "
                               "again first: a file that no longer matches its recorded SHA-256 (or is missing) "
                               "answers 409 and is not served.")
    def get(self, request, reference: str, pk: int):
        attachment = selectors.attachment_get(case_get_for_user(request.user, reference), pk)
        services.attachment_download_check(actor=request.user, attachment=attachment)
        return file_response(attachment)
