"""Legal holds, and the record of what retention removed from each case."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from casework.security.fields import EncryptedJSONField


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
    case. `audit_tombstoned_at`: when the payloads of the case's audit entries became tombstones
    (casework.privacy.tombstones, in the purge's transaction); empty on purges made before that
    was wired, whose entries still hold what they quoted."""

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


class ErasureRequest(models.Model):
    """The erasure of one data subject (or, in bulk, several): asked for by a data-protection
    officer or an admin with a reason, approved by a second, different one when it is bulk
    (more than one subject, or a subject named in more than ERASURE_FOUR_EYES_CASES cases), then
    run in batches by casework.privacy.erasure, which keeps its place in `cursor` so that a
    killed worker's run continues where it stopped.

    `subjects` lists, per subject, the ids of the entities that name them (their customer id,
    e-mail address, account, card); `identifiers` the strings in clear to replace, found from
    those entities when the run starts, encrypted at rest and emptied when it ends. `plan` and
    `report` hold case references, counts and reasons, never the data."""

    class Status(models.TextChoices):
        AWAITING_APPROVAL = "awaiting_approval", "Awaiting a second approval"
        APPROVED = "approved", "Approved, waiting to run"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed (can be resumed)"

    status = models.CharField(max_length=20, choices=Status.choices)
    reason = models.TextField()
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    requested_at = models.DateTimeField()
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="+")
    approved_at = models.DateTimeField(null=True, blank=True)
    four_eyes = models.BooleanField(help_text="Bulk: a second person approves before it runs.")
    # The (first) subject's entity, for lists and links; every subject's entities are in `subjects`.
    entity = models.ForeignKey("entities.Entity", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="erasure_requests")
    subjects = models.JSONField(help_text="Per subject, the ids of the entities naming them.")
    case_count = models.PositiveIntegerField(default=0, help_text="Cases naming the subjects when asked.")
    identifiers = EncryptedJSONField(default=dict, blank=True, editable=False)
    plan = models.JSONField(default=dict, blank=True, editable=False)
    cursor = models.PositiveIntegerField(default=0, editable=False, help_text="Cases of the plan done.")
    batches = models.PositiveIntegerField(default=0, editable=False)
    report = models.JSONField(default=dict, blank=True, editable=False)
    error = models.CharField(max_length=300, blank=True, default="", editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When its run last committed a step (the plan, a batch, the end), or when the sweep last
    # woke it: a request approved or running with none for ERASURE_STALE_AFTER_SECONDS lost its
    # worker or its task message, and the sweep (erasure_sweep) sends it again.
    progress_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-requested_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(reason=""), name="erasure_request_reason_required"),
            # Four eyes, in the database too: whoever asked never approves.
            models.CheckConstraint(condition=Q(approved_by__isnull=True) | ~Q(approved_by=F("requested_by")),
                                   name="erasure_request_approver_differs"),
            models.CheckConstraint(condition=Q(four_eyes=False) | Q(status="awaiting_approval")
                                   | Q(approved_by__isnull=False), name="erasure_request_bulk_approved"),
        ]

    def __str__(self) -> str:
        return self.reference

    @property
    def reference(self) -> str:
        return f"ERA-{self.pk}"
