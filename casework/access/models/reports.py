"""What the investigation produces: the advisory report and the agent's messages."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from casework.access.models.mutations import HRMutation
from casework.security.fields import EncryptedJSONField


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
    # Encrypted at rest: the messages between the investigation's agents carry the claim, its
    # absence details included (casework/access/special.py).
    context = EncryptedJSONField(default=dict)
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
