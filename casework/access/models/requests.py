"""What the investigation asks of people: a request (the employee's signed link or the
manager's inbox item), the employee's claim and the manager's verdict."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.contenttypes.fields import GenericRelation
from django.db import models
from django.db.models import Q
from django.utils import timezone

from casework.access.models.mutations import HRMutation
from casework.access.models.records import Employee
from casework.security.fields import EncryptedDateField, EncryptedJSONField, EncryptedTextField


def _nonce() -> str:
    return secrets.token_urlsafe(16)


class InfoRequest(models.Model):
    """A question an investigation put to a person: the employee who made the change
    (answers through a signed link) or their manager (answers in the inbox)."""

    class Kind(models.TextChoices):
        EMPLOYEE = "employee_clarification", "Clarification from the employee"
        MANAGER = "manager_validation", "Validation by the manager"

    mutation = models.ForeignKey(HRMutation, on_delete=models.CASCADE, related_name="requests")
    kind = models.CharField(max_length=30, choices=Kind.choices)
    recipient = models.ForeignKey(Employee, on_delete=models.PROTECT, related_name="info_requests")
    # Part of the signed link: a link signed for an earlier request row cannot be replayed.
    nonce = models.CharField(max_length=40, default=_nonce, editable=False)
    subject = models.CharField(max_length=200)
    # Encrypted at rest: a validation request quotes the employee's claim (casework/access/special.py).
    body = EncryptedTextField()
    correlation_id = models.CharField(max_length=64, blank=True)
    sent_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    cancel_reason = models.CharField(max_length=200, blank=True)
    reminder_count = models.PositiveSmallIntegerField(default=0)
    last_reminder_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    # The notifications that carried this request (shared app; their target is the request).
    notifications = GenericRelation("notifications.Notification", content_type_field="target_type",
                                    object_id_field="target_id", related_query_name="info_request")

    class Meta:
        ordering = ["-sent_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["mutation", "kind"],
                                    condition=Q(answered_at__isnull=True, cancelled_at__isnull=True),
                                    name="access_one_open_request_per_kind"),
            models.CheckConstraint(condition=Q(kind__in=["employee_clarification", "manager_validation"]),
                                   name="access_request_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} for {self.mutation.mutation_id} to {self.recipient.employee_id}"

    def state(self, now=None) -> str:
        now = now or timezone.now()
        if self.answered_at:
            return "answered"
        if self.cancelled_at:
            return "cancelled"
        if self.expires_at and self.expires_at <= now:
            return "expired"
        return "open"

    @property
    def is_open(self) -> bool:
        return self.state() == "open"


class EmployeeClaim(models.Model):
    """The employee's explanation, and what validating it against the records found."""

    class ClaimType(models.TextChoices):
        SICK_LEAVE = "sick_leave_cover", "I covered for a colleague on sick leave"
        VACATION = "vacation_cover", "I covered for a colleague on vacation"
        OTHER = "other", "Something else"

    class Validation(models.TextChoices):
        PENDING = "pending", "Being checked"
        VALID = "valid", "Confirmed by the records"
        INVALID = "invalid", "Not confirmed by the records"
        UNVERIFIABLE = "unverifiable", "No record could verify it"

    request = models.OneToOneField(InfoRequest, on_delete=models.CASCADE, related_name="claim")
    # The absence details (casework/access/special.py: special-category, health) are encrypted at
    # rest (casework.security.encryption): which kind of absence, its dates, the explanation
    # quoting them and the records check's result. Nothing filters or orders by them; the
    # period's order is checked by the service (answers._validate_claim_fields), not the database.
    claim_type = EncryptedTextField(choices=ClaimType.choices)
    colleague = models.ForeignKey(Employee, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    period_start = EncryptedDateField(null=True, blank=True)
    period_end = EncryptedDateField(null=True, blank=True)
    explanation = EncryptedTextField(max_length=4000)
    submitted_at = models.DateTimeField(default=timezone.now)
    validation_status = models.CharField(max_length=14, choices=Validation.choices, default=Validation.PENDING)
    validation = EncryptedJSONField(default=dict, blank=True)
    validated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=~Q(explanation=""), name="access_claim_explanation_required"),
        ]

    def __str__(self) -> str:
        return f"Claim on {self.request.mutation.mutation_id}: {self.get_claim_type_display()}"


class ManagerVerdict(models.Model):
    request = models.OneToOneField(InfoRequest, on_delete=models.CASCADE, related_name="verdict")
    approved = models.BooleanField()
    comment = models.TextField(max_length=4000)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.CheckConstraint(condition=~Q(comment=""), name="access_verdict_comment_required")]

    def __str__(self) -> str:
        return f"{'Approved' if self.approved else 'Denied'} by {self.decided_by}"
