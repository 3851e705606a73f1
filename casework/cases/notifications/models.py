"""One notification mechanism for every case type: a message to a person in the app (when they
have a login) and by email (when they have an address and have not turned that kind off)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils import timezone

from casework.security.fields import EncryptedTextField


class Notification(models.Model):
    class Kind(models.TextChoices):
        ASSIGNED = "assigned", "A case assigned to you"
        RUN_FAILED = "run_failed", "An agent run failed on your case"
        SLA_WARNING = "sla_warning", "A deadline about to pass"
        ANSWER = "answer", "An answer from a manager or an employee"
        # The access flow's requests to managers and employees, and what follows them.
        REQUEST = "request", "A request for your answer"
        REQUEST_REMINDER = "request_reminder", "A reminder of a request"
        ESCALATION = "escalation", "A request nobody answered"
        # A case type's queue for a group of people (a support ticket escalated to their group).
        GROUP_QUEUE = "group_queue", "A case escalated to your group"
        # Someone lost their access (SCIM deactivation): their open cases need a new owner.
        CASES_RETURNED = "cases_returned", "Cases back in the queue"
        # An agent's consequential step waits for a person's approval (agents.approvals).
        APPROVAL = "approval", "An agent's step waiting for your approval"

    recipient_user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                                       related_name="notifications")
    recipient_name = models.CharField(max_length=120, blank=True)
    recipient_email = models.EmailField(blank=True)
    case = models.ForeignKey("cases.Case", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=40)
    subject = models.CharField(max_length=200)
    # Encrypted at rest: a notification can quote whatever its case holds (a validation
    # request quotes the employee's absence claim).
    body = EncryptedTextField()
    url = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)
    # What the notification is about besides the case (an access request ...): answering it
    # marks the notification read. Generic, so that the shared app knows no case-type model.
    target_type = models.ForeignKey(ContentType, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    target_id = models.PositiveBigIntegerField(null=True, blank=True)
    target = GenericForeignKey("target_type", "target_id")
    # Delivery by email: attempts made, and when and why the last one gave up.
    emailed_at = models.DateTimeField(null=True, blank=True)
    email_attempts = models.PositiveSmallIntegerField(default=0)
    email_failed_at = models.DateTimeField(null=True, blank=True)
    email_error = models.TextField(blank=True)
    # Sent as the effect of a call a person approved (agents.runtime.effects): the call made
    # again after its worker died finds this and sends nothing twice.
    effect_key = models.CharField(max_length=120, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The navigation's unread count and the inbox.
            models.Index(fields=["recipient_user", "read_at"], name="notification_unread"),
            models.Index(fields=["target_type", "target_id"], name="notification_target"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["effect_key"], condition=~models.Q(effect_key=""),
                                    name="notification_effect_key_once"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} to {self.recipient_name or self.recipient_email}: {self.subject}"

    @property
    def delivery(self) -> str:
        """emailed, failed, sending (queued or between retries) or in_app (no address)."""
        if not self.recipient_email:
            return "in_app"
        if self.emailed_at:
            return "emailed"
        return "failed" if self.email_failed_at else "sending"


class NotificationPreference(models.Model):
    """Which kinds a person also wants by email (in the app they always see them). No row: all."""

    # Kinds grouped as the settings page offers them.
    GROUPS = {
        "email_assigned": ("assigned", "group_queue"),
        "email_run_failed": ("run_failed",),
        "email_sla": ("sla_warning",),
        "email_requests": ("answer", "request", "request_reminder", "escalation"),
    }

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="notification_preference")
    email_assigned = models.BooleanField("Email me when a case is assigned to me", default=True)
    email_run_failed = models.BooleanField("Email me when an agent run fails on my case", default=True)
    email_sla = models.BooleanField("Email me before a deadline passes", default=True)
    email_requests = models.BooleanField("Email me about requests, answers and escalations (access changes)",
                                         default=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Notification preferences of {self.user}"

    def wants_email(self, kind: str) -> bool:
        for field, kinds in self.GROUPS.items():
            if kind in kinds:
                return getattr(self, field)
        return True
