"""A decision at authorisation time: what POST /api/transactions/decide answered for one
transaction (casework/transactions/decisions/engine.py), and what the full evaluation in the
worker found afterwards (every live and shadow rule, the cases it opened or joined)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class Decision(models.Model):
    class Outcome(models.TextChoices):
        ALLOW = "allow", "Allow"
        REVIEW = "review", "Review"
        BLOCK = "block", "Block"

    decision_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    transaction = models.OneToOneField("transactions.Transaction", on_delete=models.PROTECT, related_name="decision")
    outcome = models.CharField(max_length=6, choices=Outcome.choices)
    # What decided it: [{"rule", "version", "action", "reason"} | {"list", "kind", "field", "value", "reason"}].
    hits = models.JSONField(default=list)
    score = models.PositiveSmallIntegerField(default=0)
    # The budget (TXN_DECISION_BUDGET_MS) ran out before every live rule was evaluated: the
    # outcome is the fallback (TXN_DECISION_FALLBACK) unless a deny list decided it first.
    timed_out = models.BooleanField(default=False)
    rules_evaluated = models.PositiveIntegerField(default=0)
    # The server's own time from the view's entry (after authentication and the middleware) to the decision, before the commit (microseconds).
    latency_us = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField()
    # The full evaluation in the worker (casework/transactions/monitoring/evaluate.py).
    evaluated_outcome = models.CharField(max_length=6, choices=Outcome.choices, blank=True)
    evaluated_hits = models.JSONField(default=list, blank=True)
    evaluated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(outcome__in=["allow", "review", "block"]),
                                   name="txn_decision_outcome_valid"),
            models.CheckConstraint(condition=Q(evaluated_outcome__in=["", "allow", "review", "block"]),
                                   name="txn_decision_evaluated_outcome_valid"),
            models.CheckConstraint(condition=Q(score__lte=100), name="txn_decision_score_range"),
        ]
        indexes = [models.Index(fields=["created_at"], name="txn_decision_time")]

    def __str__(self) -> str:
        return f"{self.decision_id} {self.outcome}"
