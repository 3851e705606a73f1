"""An HR mutation (the access change under investigation) and its rights check."""

from __future__ import annotations

from datetime import UTC

from django.db import models
from django.db.models import Q
from django.utils import timezone

from casework.access.models.records import AccessLevel, Employee, System
from casework.access.states import AccessStatus


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
