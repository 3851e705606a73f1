"""Access changes: the organisation's reference data, the change under investigation (an HR
mutation, one per case), and what the investigation produces (rights-check evidence,
requests to people and their answers, agent-to-agent messages, advisory reports).
Notifications are the shared ones (casework/cases/notifications), each request's through
InfoRequest.notifications.

Reference data mirrors the seed's CSV files (docs/access_data.md lists every column);
it is imported with `manage.py import_access_data` and editable in the admin.
"""

from __future__ import annotations

import secrets
from datetime import UTC

from django.conf import settings
from django.contrib.contenttypes.fields import GenericRelation
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from casework.access.states import AccessStatus


class AccessLevel(models.Model):
    """An access level; a higher rank includes every lower one (Read < Write < Admin)."""

    name = models.CharField(max_length=40, unique=True)
    rank = models.PositiveIntegerField(unique=True)

    class Meta:
        ordering = ["rank"]

    def __str__(self) -> str:
        return self.name


class System(models.Model):
    code = models.CharField(max_length=60, unique=True, help_text="The system's name in the data files, e.g. FinanceApp.")
    description = models.CharField(max_length=200, blank=True)
    # When a system's authorisation registry cannot be queried, check_authorization fails
    # for it (and the investigation goes to manual intervention after three attempts).
    available = models.BooleanField(default=True, help_text="Untick when the system's authorisation registry is down.")

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return self.code


class Role(models.Model):
    role_id = models.CharField(max_length=20, unique=True)
    name = models.CharField(max_length=100)
    department = models.CharField(max_length=80, blank=True)
    description = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["role_id"]

    def __str__(self) -> str:
        return f"{self.role_id} {self.name}"


class RoleAuthorisation(models.Model):
    role = models.ForeignKey(Role, on_delete=models.CASCADE, related_name="authorisations")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="role_authorisations")
    access_level = models.ForeignKey(AccessLevel, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["role__role_id", "system__code"]
        constraints = [models.UniqueConstraint(fields=["role", "system"], name="access_role_system_unique")]

    def __str__(self) -> str:
        return f"{self.role.role_id}: {self.system.code} {self.access_level.name}"


class Employee(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        TERMINATED = "terminated", "Terminated"

    employee_id = models.CharField(max_length=20, unique=True)
    name = models.CharField(max_length=120)
    email = models.EmailField(blank=True)
    department = models.CharField(max_length=80, blank=True)
    job_title = models.CharField(max_length=100, blank=True)
    role = models.ForeignKey(Role, null=True, blank=True, on_delete=models.SET_NULL, related_name="employees")
    manager = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reports")
    # Managers log in to answer validation requests; everyone else answers through a link.
    user = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="access_employee")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    hire_date = models.DateField(null=True, blank=True)
    termination_date = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["employee_id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.employee_id})"

    def clean(self):
        if self.pk and self.manager_id == self.pk:
            raise ValidationError({"manager": "An employee cannot be their own manager."})

    def employed_on(self, day) -> bool:
        if self.hire_date and day < self.hire_date:
            return False
        return not (self.termination_date and day > self.termination_date)


class DirectAuthorisation(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        REVOKED = "revoked", "Revoked"

    authorisation_id = models.CharField(max_length=20, unique=True)
    employee = models.ForeignKey(Employee, on_delete=models.CASCADE, related_name="authorisations")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="authorisations")
    access_level = models.ForeignKey(AccessLevel, on_delete=models.PROTECT, related_name="+")
    granted_by = models.CharField(max_length=120, blank=True)
    valid_from = models.DateField()
    valid_to = models.DateField(null=True, blank=True, help_text="Last day it is valid; empty means no end.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)

    class Meta:
        ordering = ["authorisation_id"]
        constraints = [
            models.CheckConstraint(condition=Q(valid_to__isnull=True) | Q(valid_to__gte=F("valid_from")),
                                   name="access_authorisation_dates_ordered"),
        ]

    def __str__(self) -> str:
        return f"{self.authorisation_id}: {self.employee.employee_id} {self.system.code} {self.access_level.name}"


class Absence(models.Model):
    class Status(models.TextChoices):
        APPROVED = "approved", "Approved"
        PENDING = "pending", "Pending"
        REJECTED = "rejected", "Rejected"

    employee = models.ForeignKey(Employee, on_delete=models.CASCADE, related_name="+")
    start_date = models.DateField()
    end_date = models.DateField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.APPROVED)

    class Meta:
        abstract = True
        ordering = ["start_date"]

    def covers(self, day) -> bool:
        return self.start_date <= day <= self.end_date


class SickLeave(Absence):
    employee = models.ForeignKey(Employee, on_delete=models.CASCADE, related_name="sick_leaves")

    class Meta(Absence.Meta):
        constraints = [
            models.CheckConstraint(condition=Q(end_date__gte=F("start_date")), name="access_sickleave_dates_ordered"),
            models.UniqueConstraint(fields=["employee", "start_date", "end_date"], name="access_sickleave_unique"),
        ]

    def __str__(self) -> str:
        return f"Sick leave {self.employee.employee_id} {self.start_date}–{self.end_date}"


class Vacation(Absence):
    employee = models.ForeignKey(Employee, on_delete=models.CASCADE, related_name="vacations")

    class Meta(Absence.Meta):
        constraints = [
            models.CheckConstraint(condition=Q(end_date__gte=F("start_date")), name="access_vacation_dates_ordered"),
            models.UniqueConstraint(fields=["employee", "start_date", "end_date"], name="access_vacation_unique"),
        ]

    def __str__(self) -> str:
        return f"Vacation {self.employee.employee_id} {self.start_date}–{self.end_date}"


class HRMutation(models.Model):
    """One change under investigation: who changed what, for whom, on which system, at which
    access level, when; and where its investigation stands (the seed's change_investigation)."""

    class ChangeType(models.TextChoices):
        CREATE = "create", "Create"
        UPDATE = "update", "Update"
        DELETE = "delete", "Delete"

    mutation_id = models.CharField(max_length=40, unique=True)
    case = models.OneToOneField("cases.Case", on_delete=models.CASCADE, related_name="access_change")
    changed_by = models.ForeignKey(Employee, on_delete=models.PROTECT, related_name="mutations_made")
    changed_for = models.ForeignKey(Employee, on_delete=models.PROTECT, related_name="mutations_received")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="mutations")
    access_level = models.ForeignKey(
        AccessLevel, on_delete=models.PROTECT, related_name="+",
        help_text="The access level this change needs on the system; the changer must hold it (or higher).",
    )
    change_type = models.CharField(max_length=10, choices=ChangeType.choices, default=ChangeType.UPDATE)
    field_changed = models.CharField(max_length=80)
    old_value = models.CharField(max_length=200, blank=True)
    new_value = models.CharField(max_length=200, blank=True)
    changed_at = models.DateTimeField()
    reason = models.TextField(blank=True, help_text="The reason recorded with the change, if any.")
    manager = models.ForeignKey(Employee, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                                help_text="Who validates the changer's explanation (their manager by default).")
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=40, choices=AccessStatus.choices, default=AccessStatus.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-changed_at"]
        verbose_name = "HR mutation"
        constraints = [
            models.CheckConstraint(condition=Q(status__in=AccessStatus.values), name="access_mutation_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.mutation_id}: {self.changed_by.employee_id} {self.field_changed} for {self.changed_for.employee_id}"

    @property
    def status_label(self) -> str:
        return AccessStatus(self.status).label

    @property
    def is_self_change(self) -> bool:
        """The employee changed their own access (changed by = changed for)."""
        return self.changed_by_id == self.changed_for_id

    @property
    def change_date(self):
        return self.changed_at.astimezone(UTC).date()

    def summary(self) -> str:
        values = f" from {self.old_value or '—'} to {self.new_value or '—'}" if (self.old_value or self.new_value) else ""
        return (f"{self.changed_by.name} changed {self.field_changed} for {self.changed_for.name} on "
                f"{self.system.code}{values} (needs {self.access_level.name}) on {self.changed_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC")


class RightsCheck(models.Model):
    """The rights-check result a step accepted: check_authorization's evidence rows and the
    agent's explanation."""

    mutation = models.ForeignKey(HRMutation, on_delete=models.CASCADE, related_name="rights_checks")
    authorized = models.BooleanField()
    held_level = models.CharField(max_length=40, blank=True)
    evidence = models.JSONField(default=list)
    message = models.TextField(blank=True)
    checked_at = models.DateTimeField(default=timezone.now)
    run_id = models.BigIntegerField(null=True, blank=True)
    call_key = models.CharField(max_length=80, blank=True)

    class Meta:
        ordering = ["-checked_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["run_id", "call_key"], condition=~Q(call_key=""),
                                    name="access_rightscheck_once_per_call"),
        ]


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
    body = models.TextField()
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
        INVALID = "invalid", "Contradicted by the records"
        UNVERIFIABLE = "unverifiable", "Cannot be checked against records"

    request = models.OneToOneField(InfoRequest, on_delete=models.CASCADE, related_name="claim")
    claim_type = models.CharField(max_length=20, choices=ClaimType.choices)
    colleague = models.ForeignKey(Employee, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    period_start = models.DateField(null=True, blank=True)
    period_end = models.DateField(null=True, blank=True)
    explanation = models.TextField(max_length=4000)
    submitted_at = models.DateTimeField(default=timezone.now)
    validation_status = models.CharField(max_length=14, choices=Validation.choices, default=Validation.PENDING)
    validation = models.JSONField(default=dict, blank=True)
    validated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(period_start__isnull=True) | Q(period_end__isnull=True) | Q(period_end__gte=F("period_start")),
                name="access_claim_period_ordered",
            ),
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


class AdvisoryReport(models.Model):
    class Kind(models.TextChoices):
        STANDARD = "standard", "Advisory report"
        MANUAL = "manual_intervention", "Manual-intervention report"

    class Recommendation(models.TextChoices):
        ACCEPT = "accept", "Accept"
        REJECT = "reject_investigate", "Reject / Investigate"
        MANUAL = "manual_intervention", "Manual Intervention"

    # The case outcome each recommendation proposes (cases.types: accepted/rejected/manual).
    OUTCOME = {"accept": "accepted", "reject_investigate": "rejected", "manual_intervention": "manual"}

    mutation = models.ForeignKey(HRMutation, on_delete=models.CASCADE, related_name="reports")
    report_id = models.CharField(max_length=60, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.STANDARD)
    summary = models.TextField()
    recommendation = models.CharField(max_length=20, choices=Recommendation.choices)
    details = models.JSONField(default=list, help_text="The report's findings, one line each.")
    created_at = models.DateTimeField(default=timezone.now)
    run_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(recommendation__in=["accept", "reject_investigate", "manual_intervention"]),
                                   name="access_report_recommendation_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.report_id} ({self.get_recommendation_display()})"

    @property
    def proposed_outcome(self) -> str:
        return self.OUTCOME[self.recommendation]


class AgentMessage(models.Model):
    """One agent-to-agent message in the seed's envelope (sender, receiver, action, context,
    correlation_id, timestamp, status, error). A request and its reply share a correlation id.

    Kept here rather than in audit/: only the access investigation speaks this protocol so
    far, and the model knows nothing access-specific (a case, a run id, the envelope), so it
    can move to audit/ unchanged when another case type adopts it.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SUCCESS = "success", "Success"
        ERROR = "error", "Error"

    case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="agent_messages")
    sender = models.CharField(max_length=60)
    receiver = models.CharField(max_length=60)
    action = models.CharField(max_length=60)
    context = models.JSONField(default=dict)
    correlation_id = models.CharField(max_length=64, db_index=True)
    timestamp = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    error = models.JSONField(null=True, blank=True)
    reply_to = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replies")
    # Which pipeline run and call sent it: a resumed run finds the message already written.
    run_id = models.BigIntegerField(null=True, blank=True)
    key = models.CharField(max_length=120, blank=True)

    class Meta:
        ordering = ["timestamp", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run_id", "key"], condition=~Q(key=""), name="access_message_once_per_key"),
            models.CheckConstraint(condition=Q(status__in=["pending", "success", "error"]),
                                   name="access_message_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.sender} -> {self.receiver}: {self.action} ({self.status})"

    def envelope(self) -> dict:
        data = {"sender": self.sender, "receiver": self.receiver, "action": self.action, "context": self.context,
                "correlation_id": self.correlation_id, "timestamp": self.timestamp.isoformat(),
                "status": self.status}
        if self.error:
            data["error"] = self.error
        return data
