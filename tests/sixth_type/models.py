from __future__ import annotations

from django.db import models

from casework.cases.models import Case
from tests.sixth_type.states import WarrantyStatus


class WarrantyClaim(models.Model):
    """A customer's claim that a product broke under warranty: the type's record, one per case."""

    case = models.OneToOneField(Case, on_delete=models.CASCADE, related_name="warranty_claim")
    serial_number = models.CharField(max_length=40)
    product = models.CharField(max_length=100)
    defect = models.TextField()
    months_since_purchase = models.PositiveIntegerField()
    # The lifecycle (states.py); written only through warranty_transition.
    status = models.CharField(max_length=12, choices=WarrantyStatus.choices, default=WarrantyStatus.RECEIVED)
    # The assessor's recommendation: "covered" or "not_covered", and why.
    verdict = models.CharField(max_length=12, blank=True)
    verdict_reason = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"{self.product} {self.serial_number}"

    def summary(self) -> dict:
        return {"reference": self.case.reference, "serial_number": self.serial_number, "product": self.product,
                "defect": self.defect, "months_since_purchase": self.months_since_purchase,
                "status": self.status, "verdict": self.verdict, "verdict_reason": self.verdict_reason}
