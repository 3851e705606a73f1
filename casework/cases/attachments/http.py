"""What the page and the API share: refusing an oversized body before reading it, and
streaming a stored file to the one who may read it."""

from __future__ import annotations

from django.conf import settings
from django.http import FileResponse

from casework.cases.attachments.models import Attachment
from casework.cases.attachments.services import FileTooLarge, size_limit_message

# Room for the multipart envelope and the form's other fields beside the file.
MULTIPART_OVERHEAD = 64 * 1024


def refuse_oversized_body(request) -> None:
    """A body that cannot hold a file within the limit is refused (413) before Django reads and
    spools it: the declared Content-Length says so up front."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > settings.ATTACHMENT_MAX_BYTES + MULTIPART_OVERHEAD:
        raise FileTooLarge(size_limit_message("", None), code="too_large")


def file_response(attachment: Attachment) -> FileResponse:
    """The stored file as a download: never displayed inline, never sniffed into another type,
    never cached by a shared cache, and no script can run in it even if it is opened."""
    response = FileResponse(attachment.file.storage.open(attachment.file.name, "rb"), as_attachment=True,
                            filename=attachment.original_name, content_type=attachment.content_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, no-store"
    response["X-Evidence-SHA256"] = attachment.sha256
    return response
