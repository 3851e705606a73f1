"""Legal holds, and the record of what retention removed from each case."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class LegalHold(models.Model):
    """A case, or an entity (and so every case naming it), kept from retention while the hold is
    open: placed and lifted by a lead or an admin (or a data-protection officer), with a reason,
    each on record. `until` ends it by itself; None: until lifted."""

    case = models.ForeignKey("cases.Case", null=True, blank=True, on_delete=models.CASCADE,
                             related_name="legal_holds")
    entity = models.ForeignKey("entities.Entity", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="legal_holds")
    reason = models.TextField()
    placed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    placed_at = models.DateTimeField()
    until = models.DateTimeField(null=True, blank=True)
    lifted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                  related_name="+")
    lifted_at = models.DateTimeField(null=True, blank=True)
    lift_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-placed_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(case__isnull=True) ^ Q(entity__isnull=True),
                                   name="legal_hold_case_xor_entity"),
            models.CheckConstraint(condition=~Q(reason=""), name="legal_hold_reason_required"),
            models.CheckConstraint(condition=Q(lifted_at__isnull=True) | ~Q(lift_reason=""),
                                   name="legal_hold_lift_reason_required"),
        ]
        indexes = [
            models.Index(fields=["case"], name="legal_hold_open_case", condition=Q(lifted_at__isnull=True)),
            models.Index(fields=["entity"], name="legal_hold_open_entity", condition=Q(lifted_at__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"Legal hold on {self.subject_label}"

    @property
    def subject_label(self) -> str:
        return self.case.reference if self.case_id else str(self.entity)

    def is_open(self, now) -> bool:
        return self.lifted_at is None and (self.until is None or self.until > now)


class RetentionPurge(models.Model):
    """One case whose personal data retention removed: under which policy, when, and how much
    of what (counts, never the data). Its existence is the claim that makes a second run skip the
    case. `audit_tombstoned_at` stays empty until the erasure work tombstones the payloads of the
    case's audit entries (audit.erasure.audit_entries_tombstone): until then they still hold
    what they quoted."""

    case = models.OneToOneField("cases.Case", on_delete=models.CASCADE, related_name="retention_purge")
    policy = models.CharField(max_length=80, help_text="type=days@moment, as settings.RETENTION said.")
    purged_at = models.DateTimeField()
    removed = models.JSONField(default=dict)
    audit_tombstoned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-purged_at", "-id"]
        indexes = [models.Index(fields=["case"], name="retention_purge_pending_audit",
                                condition=Q(audit_tombstoned_at__isnull=True))]

    def __str__(self) -> str:
        return f"{self.case_id} purged under {self.policy}"
