"""The restore drill's check of the evidence files (registered with casework.ops.restore_checks
from CaseAttachmentsConfig.ready): every file against the SHA-256 recorded when it was uploaded."""

from __future__ import annotations

from casework.cases.attachments.models import Attachment
from casework.cases.attachments.services import attachment_stored_sha256

NAMED = 20  # how many failing evidence files the message names


def attachments_verify_stored() -> tuple[bool, str]:
    checked, bad = 0, []
    for attachment in Attachment.objects.select_related("case").order_by("id").iterator(chunk_size=500):
        checked += 1
        found = attachment_stored_sha256(attachment)
        if found != attachment.sha256:
            what = "missing" if found is None else f"SHA-256 {found}, recorded {attachment.sha256}"
            bad.append(f"{attachment.case.reference}/{attachment.original_name} ({attachment.file.name}): {what}")
    if bad:
        return False, (f"{len(bad)} of {checked} evidence files do not match their recorded hash: "
                       + "; ".join(bad[:NAMED]) + ("; ..." if len(bad) > NAMED else "") + ".")
    return True, f"Evidence files: {checked} match their recorded SHA-256."
