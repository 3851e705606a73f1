from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Case as CaseWhen  # Case is the model here
from django.db.models import Q, Value, When

from casework.cases.types import CASE_TYPES, case_type_choices


class Case(models.Model):
    class Status(models.TextChoices):
        NEW = "new", "New"
        IN_PROGRESS = "in_progress", "In progress"
        AWAITING_RESPONSE = "awaiting_response", "Awaiting response"
        # The agents' end state: their recommendation is in, a person has to decide.
        AWAITING_DECISION = "awaiting_decision", "Awaiting decision"
        # Resolved and Closed mean a person decided; no agent sets them (case_set_status).
        RESOLVED = "resolved", "Resolved"
        CLOSED = "closed", "Closed"

    class Priority(models.TextChoices):
        CRITICAL = "critical", "Critical"
        HIGH = "high", "High"
        MEDIUM = "medium", "Medium"
        LOW = "low", "Low"

    PRIORITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}

    reference = models.CharField(max_length=20, unique=True, editable=False)
    # One of the registered types (casework.cases.types): its choices are read when asked for,
    # and no database constraint lists them, so that a new type needs no migration here.
    case_type = models.CharField(max_length=40, choices=case_type_choices)  # indexed by (case_type, status) (leading column): no index of its own to update on every write
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.NEW)
    priority = models.CharField(max_length=10, choices=Priority.choices, default=Priority.MEDIUM)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="assigned_cases",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="created_cases",
    )
    created_at = models.DateTimeField(auto_now_add=True)  # indexed by case_created_id (leading column): no index of its own to update on every write
    updated_at = models.DateTimeField(auto_now=True)  # indexed by case_updated_id (leading column): no index of its own to update on every write
    closed_at = models.DateTimeField(null=True, blank=True)
    # The SLA deadline (settings.CASE_SLA by type and priority; casework/cases/sla.py), set
    # when the case is created and again when its priority changes. The beat task's claims:
    # when it warned the assignee that the deadline is near, and when it recorded the breach,
    # each set once by a conditional UPDATE so that a duplicate task run does nothing.
    due_at = models.DateTimeField(null=True, blank=True, db_index=True)
    sla_warned_at = models.DateTimeField(null=True, blank=True, editable=False)
    sla_breached_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The SLA clock is stopped since then (waiting on a customer: case_sla_pause); on resume
    # due_at moves later by the paused time. A paused case is neither due soon nor breached.
    sla_paused_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Critical first: a stored column the database computes from `priority`, so that the
    # queue's priority sort reads an index instead of sorting the whole table.
    priority_rank = models.GeneratedField(
        expression=CaseWhen(*[When(priority=p, then=Value(rank)) for p, rank in PRIORITY_RANK.items()],
                            default=Value(9)),
        output_field=models.SmallIntegerField(), db_persist=True,
    )
    # Restricted by a lead to named people (an investigation of an employee): only they and
    # admins see it, whatever their teams (casework/cases/visibility.py; CaseRestriction).
    restricted = models.BooleanField(default=False)

    # Every queue sort ends with these, so that rows with equal keys keep one order and
    # pages never overlap (casework.cases.filters.CaseOrderingFilter).
    TIEBREAKERS = ("-created_at", "-id")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "priority"]),
            models.Index(fields=["case_type", "status"]),
            models.Index(fields=["-created_at", "-id"], name="case_created_id"),
            models.Index(fields=["priority_rank", "-created_at", "-id"], name="case_priority_rank"),
            # "Lowest priority first" still shows the newest first within a priority.
            models.Index(fields=["-priority_rank", "-created_at", "-id"], name="case_priority_rank_desc"),
            models.Index(fields=["updated_at", "id"], name="case_updated_id"),
            models.Index(fields=["status", "-created_at", "-id"], name="case_status_created"),
            # The dashboard's cases decided per day and time to decision over its 30 days: a
            # range of this index, not every case ever closed.
            models.Index(fields=["closed_at"], name="case_closed_at", condition=Q(closed_at__isnull=False)),
            models.Index(fields=["sla_breached_at"], name="case_breached_at",
                         condition=Q(sla_breached_at__isnull=False)),
            # The dashboard's open cases (NOT status IN resolved, closed): the open ones, not a
            # scan of every case ever opened.
            models.Index(fields=["case_type", "status", "priority"], name="case_open",
                         condition=~Q(status__in=("resolved", "closed"))),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["new", "in_progress", "awaiting_response", "awaiting_decision", "resolved",
                                                           "closed"]), name="case_status_valid"),
            models.CheckConstraint(condition=Q(priority__in=["critical", "high", "medium", "low"]), name="case_priority_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.reference} {self.title}"

    @property
    def type_info(self):
        return CASE_TYPES[self.case_type]

    @property
    def is_closed(self) -> bool:
        return self.status == self.Status.CLOSED

    @property
    def record(self):
        """This case's case-type record (an alert, a ticket ...), or None."""
        attr = self.type_info.record_attr
        return getattr(self, attr, None) if attr else None


class CaseRestriction(models.Model):
    """One person a restricted case is shown to (Case.restricted)."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="restrictions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="case_restrictions")
    granted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["case", "user"], name="case_restriction_unique")]
        indexes = [models.Index(fields=["user", "case"], name="case_restriction_user")]


class CaseCounter(models.Model):
    """The last reference number handed out per case type (FRA-000123)."""

    case_type = models.CharField(max_length=40, primary_key=True)
    last = models.PositiveIntegerField(default=0)


class Decision(models.Model):
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="decisions")
    outcome = models.CharField(max_length=40)
    reason = models.TextField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="decisions"
    )
    decided_at = models.DateTimeField(auto_now_add=True)
    final = models.BooleanField(default=True)
    # What later work attached to the decision (a captured knowledge pattern, ...).
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-decided_at"]
        indexes = [
            # The dashboard's agreement panel and latest decisions: the final decisions of its
            # 30 days, newest first, however many decisions came before them.
            models.Index(fields=["-decided_at"], name="decision_final_decided", condition=Q(final=True)),
        ]
        constraints = [
            models.UniqueConstraint(fields=["case"], condition=Q(final=True), name="one_final_decision_per_case"),
            models.CheckConstraint(condition=~Q(reason=""), name="decision_reason_required"),
        ]

    def __str__(self) -> str:
        return f"{self.case.reference}: {self.outcome_label}"

    @property
    def outcome_label(self) -> str:
        return self.case.type_info.outcome_label(self.outcome)


class Comment(models.Model):
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="case_comments")
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.case.reference} comment by {self.author}"
