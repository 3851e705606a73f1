"""Demo evidence: a call note attached to the oldest open fraud case (registered from the fraud
app's ready with casework.cases.demo.demo_register_after)."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from casework.cases.attachments.models import Attachment
from casework.cases.attachments.services import attachment_upload
from casework.cases.models import Case

CALL_NOTE = """Call with the account holder, 10:40 UTC (demo data)

They confirm the two large deposits came from selling a car, and say they did not make the
withdrawals from the new device. Asked them to send the bank statement for the month.
"""


def demo_load_attachments(*, users: dict) -> None:
    case = (Case.objects.filter(case_type="fraud_alert").exclude(status=Case.Status.CLOSED)
            .order_by("created_at", "id").first())
    if case is None or Attachment.objects.filter(case__case_type="fraud_alert").exists():
        return
    attachment_upload(actor=users["alice"], case=case,
                      upload=SimpleUploadedFile("call-notes.txt", CALL_NOTE.encode(), content_type="text/plain"))
