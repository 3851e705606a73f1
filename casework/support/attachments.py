"""An inbound email's attachments, stored as its ticket's case evidence (casework.cases.attachments:
the same size and type rules as an upload, SHA-256); a refused one is noted on the record."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from casework.errors import DomainError
from casework.support.models import InboundEmail, Ticket


def inbound_attachments_store(*, inbound: InboundEmail, ticket: Ticket) -> None:
    """Store the email's attachments as the ticket's case evidence (same rules as an upload);
    a refused one is noted on the record (and the message still counts)."""
    from anymail.inbound import AnymailInboundMessage

    from casework.cases.attachments.services import attachment_upload

    parts = AnymailInboundMessage.parse_raw_mime(inbound.raw).attachments
    if not parts:
        return
    kept = []
    for part in parts:
        upload = part.as_uploaded_file()
        try:
            with transaction.atomic():
                attachment = attachment_upload(actor="system", case=ticket.case, upload=upload,
                                               received_from=inbound.from_email)
            kept.append({"name": attachment.original_name, "size": attachment.size, "sha256": attachment.sha256,
                         "attachment": attachment.pk})
        except (DomainError, ValidationError) as exc:
            reason = exc.message if isinstance(exc, DomainError) else "; ".join(exc.messages)
            kept.append({"name": upload.name, "refused": reason[:300]})
    InboundEmail.objects.filter(pk=inbound.pk).update(ticket=ticket, attachments=kept)
    inbound.attachments, inbound.ticket = kept, ticket
