"""Reads of a case's evidence files."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from casework.cases.attachments.models import Attachment
from casework.cases.models import Case


def attachment_list(case: Case) -> QuerySet[Attachment]:
    return Attachment.objects.filter(case=case).select_related("uploaded_by").order_by("-uploaded_at", "-id")


def attachment_get(case: Case, pk: int) -> Attachment:
    """One attachment of this case; 404 for another case's (the case's access check already ran)."""
    return get_object_or_404(Attachment.objects.select_related("case", "uploaded_by"), case=case, pk=pk)
