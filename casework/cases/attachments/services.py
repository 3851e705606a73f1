"""Attaching evidence to a case: checked, hashed, stored, audited.

Steps of `attachment_upload`: refuse a closed case (its record is what the decision was made
on), a file over ATTACHMENT_MAX_BYTES (413) and a refused type (400, naming it); hash the whole
file (SHA-256) in chunks; store it through the storage API under a random name; record the row
and the audit entry (which holds the hash, so the trail can vouch for the file) in one
transaction. If the row or the entry fails, the stored file is removed again.
"""

from __future__ import annotations

import hashlib
from pathlib import PurePosixPath

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.template.defaultfilters import filesizeformat

from audit.services import audit_record
from casework.cases.attachments.filetypes import SNIFF_BYTES, file_check
from casework.cases.attachments.models import Attachment
from casework.cases.models import Case
from casework.errors import Conflict, DomainError

NAME_MAX_LENGTH = 255


class FileTooLarge(DomainError):
    status_code = 413


def size_limit_message(name: str, size: int | None) -> str:
    limit = settings.ATTACHMENT_MAX_BYTES
    what = f"{name} is {filesizeformat(size)}" if size is not None else "the file is too large"
    return f"Refused: {what}; the limit is {filesizeformat(limit)} (ATTACHMENT_MAX_BYTES = {limit} bytes)."


def _clean_name(name: str) -> str:
    # Browsers send a bare name; some clients send a path (C:\Users\...\scan.pdf).
    base = PurePosixPath((name or "").replace("\\", "/")).name.strip()
    if not base:
        raise ValidationError({"file": "The file has no name."})
    if len(base) > NAME_MAX_LENGTH:
        stem, ext = base[: NAME_MAX_LENGTH - 10], PurePosixPath(base).suffix[:10]
        base = stem + ext
    return base


def _sha256(upload: UploadedFile) -> str:
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    return digest.hexdigest()


@transaction.atomic
def attachment_upload(*, actor: User | str, case: Case, upload: UploadedFile, received_from: str = "") -> Attachment:
    """`actor`: the person uploading, or "system" for a file attached to an inbound email
    (then `received_from` is its sender)."""
    case = Case.objects.select_for_update(of=("self",)).get(pk=case.pk)
    if case.is_closed:
        raise Conflict(f"{case.reference} is closed; its evidence can no longer change.", code="case_closed")
    name = _clean_name(upload.name)
    if upload.size > settings.ATTACHMENT_MAX_BYTES:
        raise FileTooLarge(size_limit_message(name, upload.size), code="too_large")
    if upload.size == 0:
        raise ValidationError({"file": f"Refused: {name} is empty."})
    upload.seek(0)
    content_type = file_check(name, upload.read(SNIFF_BYTES))
    sha256 = _sha256(upload)
    upload.seek(0)
    attachment = Attachment(case=case, original_name=name, size=upload.size, sha256=sha256,
                            content_type=content_type, uploaded_by=actor if isinstance(actor, User) else None,
                            received_from=received_from[:300])
    attachment.file.save(name, upload, save=False)
    try:
        attachment.save()
        audit_record(actor=actor, action="attachment.uploaded", case=case, obj=attachment,
                     data={"name": name, "size": upload.size, "sha256": sha256, "content_type": content_type,
                           "stored_as": attachment.file.name,
                           **({"received_from": received_from} if received_from else {})})
    except BaseException:
        attachment.file.storage.delete(attachment.file.name)
        raise
    return attachment


class FileAltered(DomainError):
    """The stored bytes no longer hash to what was recorded at upload: not served."""

    status_code = 409


def attachment_stored_sha256(attachment: Attachment) -> str | None:
    """The SHA-256 of the bytes storage holds for the attachment now; None if the file is gone."""
    storage, name = attachment.file.storage, attachment.file.name
    if not storage.exists(name):
        return None
    digest = hashlib.sha256()
    with storage.open(name, "rb") as stored:
        for chunk in iter(lambda: stored.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def attachment_download_check(*, actor: User, attachment: Attachment) -> None:
    """Before a file is served: re-hash what storage holds (at most ATTACHMENT_MAX_BYTES, read
    once) and compare it with the hash recorded at upload. A match is audited as a download
    (who read which evidence, when: chain of custody); a mismatch or a missing file is audited
    as such and refused (FileAltered, 409), so nobody is handed altered evidence unknowingly.
    Not one transaction: the entry of a refusal must stay when the refusal is raised."""
    found = attachment_stored_sha256(attachment)
    data = {"name": attachment.original_name, "sha256": attachment.sha256}
    if found != attachment.sha256:
        audit_record(actor=actor, action="attachment.integrity_failed", case=attachment.case, obj=attachment,
                     data={**data, "found": found or "missing"})
        what = "is missing from storage" if found is None else f"no longer matches its SHA-256 (now {found[:12]}…)"
        raise FileAltered(f"{attachment.original_name} {what}; it was recorded as {attachment.sha256[:12]}… "
                          f"at upload. It is not served.", code="file_altered")
    audit_record(actor=actor, action="attachment.downloaded", case=attachment.case, obj=attachment, data=data)
