"""Evidence files attached to a case: stored through Django's storage API (STORAGES["default"];
var/media/ on the embedded default), never served from a public URL, each with its SHA-256."""

from __future__ import annotations

import uuid
from pathlib import PurePosixPath

from django.conf import settings
from django.db import models
from django.db.models import Q


def attachment_path(instance: Attachment, filename: str) -> str:
    """Where the file lands in storage: under its case, a random name keeping only the
    (allow-listed) extension. The person's file name is kept on the row, never in a path."""
    ext = PurePosixPath(filename).suffix.lower()
    return f"case-attachments/{instance.case.reference}/{uuid.uuid4().hex}{ext}"


class Attachment(models.Model):
    case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="attachments")
    file = models.FileField(upload_to=attachment_path, max_length=200)
    original_name = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64, db_index=True)
    content_type = models.CharField(max_length=100)
    # Nobody when it came in by email (received_from names the sender).
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="case_attachments")
    received_from = models.CharField(max_length=300, blank=True, default="",
                                     help_text="The sender's address, for a file that came attached to an email.")
    uploaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-uploaded_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="attachment_sha256_hex"),
            models.CheckConstraint(condition=~Q(original_name=""), name="attachment_name_required"),
        ]

    def __str__(self) -> str:
        return f"{self.case.reference}: {self.original_name}"

    @property
    def short_hash(self) -> str:
        return self.sha256[:12]
