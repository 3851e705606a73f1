"""Transaction investigations (seed 003): card transactions, and the investigation a planner
runs over one of them, with its decisions, tool executions, insights, recommendations and
drafted rule.

The planner's state (seed section 2) is kept JSON-safe in `Investigation.state`, written after
every planner step and every tool step; the rows below are the same facts in queryable form,
written idempotently (one per step, one per tool: a tool is never executed twice).
"""

from __future__ import annotations

import json

from django.conf import settings
from django.db import models
from django.db.models import Q

from casework.cases.models import Case
from casework.transactions.states import RESUMABLE, InvestigationStatus


class CardAccount(models.Model):
    account_id = models.CharField(max_length=64, unique=True)
    holder_name = models.CharField(max_length=120, blank=True)
    home_country = models.CharField(max_length=2, help_text="ISO 3166-1 alpha-2.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["account_id"]

    def __str__(self) -> str:
        return self.account_id


class Transaction(models.Model):
    class Channel(models.TextChoices):
        POS = "pos", "Card present (POS)"
        CONTACTLESS = "contactless", "Contactless"
        ECOMMERCE = "ecommerce", "E-commerce (card not present)"
        ATM = "atm", "ATM"
        MOTO = "moto", "Mail / phone order"

    transaction_id = models.CharField(max_length=64, unique=True)
    account = models.ForeignKey(CardAccount, on_delete=models.PROTECT, related_name="transactions")
    card_last4 = models.CharField(max_length=4)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3)
    merchant = models.CharField(max_length=120)
    mcc = models.CharField(max_length=4, help_text="Merchant category code (ISO 18245).")
    country = models.CharField(max_length=2)
    channel = models.CharField(max_length=12, choices=Channel.choices)
    device_id = models.CharField(max_length=64, blank=True)
    occurred_at = models.DateTimeField()
    # What fraud teams rely on besides the seed's fields (all optional: blank when not sent).
    auth_result = models.CharField(max_length=10, blank=True, help_text="approved or declined.")
    three_ds_result = models.CharField(max_length=16, blank=True,
                                       help_text="3-D Secure: authenticated, attempted, failed, not_enrolled.")
    avs_result = models.CharField(max_length=8, blank=True, help_text="Address check: match, partial, no_match.")
    cvv_result = models.CharField(max_length=8, blank=True, help_text="match or no_match.")
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    email_hash = models.CharField(max_length=64, blank=True, help_text="SHA-256 of the lower-cased email.")
    bin = models.CharField(max_length=8, blank=True, help_text="The card's first 6 to 8 digits.")
    merchant_id = models.CharField(max_length=64, blank=True)
    # The amount in SETTLEMENT_CURRENCY at ingestion (CurrencyRate): what rules compare.
    settlement_amount = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    # When the detection rules ran on it (null: not yet; the sweep finds these).
    evaluated_at = models.DateTimeField(null=True, blank=True)
    # The aggregates the active rules read, as they stood when it was stored (key -> value;
    # casework.transactions.aggregates): what the rules evaluate it with, later, in the worker.
    aggregates = models.JSONField(default=dict, blank=True)
    # Confirmed fraud: a chargeback from upstream, or a TXN case decided "fraud".
    is_fraud = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-occurred_at", "-id"]
        indexes = [
            models.Index(fields=["account", "occurred_at"]), models.Index(fields=["occurred_at"]),
            # Links across cards (a ring shares a device, an IP, an email or a merchant).
            models.Index(fields=["device_id"], name="txn_device", condition=~Q(device_id="")),
            models.Index(fields=["ip_address"], name="txn_ip", condition=Q(ip_address__isnull=False)),
            models.Index(fields=["email_hash"], name="txn_email_hash", condition=~Q(email_hash="")),
            models.Index(fields=["merchant_id"], name="txn_merchant_id", condition=~Q(merchant_id="")),
            models.Index(fields=["created_at"], name="txn_unevaluated", condition=Q(evaluated_at__isnull=True)),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="txn_amount_positive"),
            models.CheckConstraint(condition=Q(channel__in=["pos", "contactless", "ecommerce", "atm", "moto"]),
                                   name="txn_channel_valid"),
        ]

    def __str__(self) -> str:
        return self.transaction_id


def analysed(state: dict) -> bool:
    """Whether an investigation's state holds any analysis: a severity rests on one."""
    return any(state.get(key) for key in ("pattern_results", "similarity_results", "reasoning"))


class Investigation(models.Model):
    # Declared with its moves in casework/transactions/states.py; written only through
    # states.investigation_transition.
    Status = InvestigationStatus

    class Severity(models.TextChoices):
        CRITICAL = "CRITICAL", "Critical"
        HIGH = "HIGH", "High"
        MEDIUM = "MEDIUM", "Medium"
        LOW = "LOW", "Low"

    RESUMABLE = RESUMABLE

    case = models.OneToOneField(Case, on_delete=models.PROTECT, related_name="txn_investigation")
    transaction = models.ForeignKey(Transaction, on_delete=models.PROTECT, related_name="investigations")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    severity = models.CharField(max_length=8, choices=Severity.choices, default=Severity.LOW)
    confidence_score = models.FloatField(default=0.0)
    state = models.JSONField(default=dict, blank=True)
    summary = models.TextField(blank=True)
    error = models.TextField(blank=True)
    # The similarity feature vector (casework.transactions.similarity), and its coarse bucket:
    # an indexed key that narrows the nearest-neighbour scan to comparable investigations.
    features = models.JSONField(default=list, blank=True)
    feature_bucket = models.CharField(max_length=32, blank=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(confidence_score__gte=0, confidence_score__lte=1),
                                   name="txn_investigation_confidence_range"),
            models.CheckConstraint(
                condition=Q(status__in=["PENDING", "IN_PROGRESS", "COMPLETED", "INCONCLUSIVE", "FAILED", "TIMED_OUT",
                                        "STOPPED"]),
                name="txn_investigation_status_valid"),
            models.CheckConstraint(condition=Q(severity__in=["CRITICAL", "HIGH", "MEDIUM", "LOW"]),
                                   name="txn_investigation_severity_valid"),
        ]
        indexes = [
            # similarity.nearest: each bucket's newest completed investigations, read as one
            # index range per bucket (not every investigation of six buckets, then sorted).
            models.Index(fields=["feature_bucket", "-id"], name="txn_inv_bucket_newest",
                         condition=Q(status="COMPLETED")),
        ]

    def __str__(self) -> str:
        return f"{self.case.reference} {self.transaction.transaction_id}"

    @property
    def is_resumable(self) -> bool:
        return self.status in self.RESUMABLE

    @property
    def assessed_severity(self) -> str | None:
        """The severity the agents claim, or None: not while the planner has yet to finish
        (pending, in progress), never for an inconclusive one, and only once some evidence
        was analysed (a pattern, similarity or reasoning result). `severity` keeps the field's
        default LOW; this is what pages and the API show."""
        if self.status in (InvestigationStatus.PENDING, InvestigationStatus.IN_PROGRESS,
                           InvestigationStatus.INCONCLUSIVE):
            return None
        return self.severity if analysed(self.state or {}) else None


class PlannerDecision(models.Model):
    investigation = models.ForeignKey(Investigation, on_delete=models.CASCADE, related_name="planner_decisions")
    step = models.PositiveIntegerField()
    selected_tool = models.CharField(max_length=40)
    reason = models.TextField()
    confidence = models.FloatField()
    used_fallback = models.BooleanField(default=False)
    # What the model asked for when a rule overruled it (or why it gave no usable answer).
    rejected = models.CharField(max_length=300, blank=True)
    timestamp = models.DateTimeField()

    class Meta:
        ordering = ["investigation", "step"]
        constraints = [
            models.UniqueConstraint(fields=["investigation", "step"], name="txn_one_decision_per_step"),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="txn_decision_confidence"),
        ]


class ToolExecution(models.Model):
    class Status(models.TextChoices):
        SUCCESS = "SUCCESS", "Success"
        FAILED = "FAILED", "Failed"
        TIMED_OUT = "TIMED_OUT", "Timed out"

    investigation = models.ForeignKey(Investigation, on_delete=models.CASCADE, related_name="tool_executions")
    # The round of the investigation: 1, then one more for each re-assessment on a joined hit
    # that raised the stakes (casework.transactions.reassess), which runs every tool again.
    assessment = models.PositiveSmallIntegerField(default=1)
    step = models.PositiveIntegerField()
    tool_name = models.CharField(max_length=40)
    input_summary = models.JSONField(default=dict)
    output_summary = models.JSONField(default=dict)
    execution_time_ms = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices)
    error_message = models.TextField(blank=True)
    timestamp = models.DateTimeField()

    class Meta:
        ordering = ["investigation", "step"]
        constraints = [
            # A tool runs once per round of an investigation, even across resumes (seed 6.3: a
            # failed or timed-out tool counts as done, so it is never retried in a loop).
            models.UniqueConstraint(fields=["investigation", "assessment", "tool_name"],
                                    name="txn_one_execution_per_tool_and_round"),
            models.CheckConstraint(condition=Q(status__in=["SUCCESS", "FAILED", "TIMED_OUT"]),
                                   name="txn_execution_status_valid"),
        ]


class Insight(models.Model):
    class Kind(models.TextChoices):
        PATTERN = "pattern", "Pattern"
        SIMILARITY = "similarity", "Similar investigations"
        HYPOTHESIS = "hypothesis", "Hypothesis"

    investigation = models.ForeignKey(Investigation, on_delete=models.CASCADE, related_name="insights")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    key = models.CharField(max_length=60)
    title = models.CharField(max_length=300)
    confidence = models.FloatField(default=0.0)
    evidence = models.JSONField(default=list)

    class Meta:
        ordering = ["investigation", "-confidence", "id"]
        constraints = [models.UniqueConstraint(fields=["investigation", "kind", "key"], name="txn_insight_unique")]


class Recommendation(models.Model):
    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    investigation = models.ForeignKey(Investigation, on_delete=models.CASCADE, related_name="recommendations")
    action = models.CharField(max_length=60)
    title = models.CharField(max_length=200)
    reason = models.TextField()
    priority = models.PositiveSmallIntegerField(default=2, help_text="1 is the most urgent.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROPOSED)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["investigation", "priority", "id"]
        constraints = [
            models.UniqueConstraint(fields=["investigation", "action"], name="txn_recommendation_unique"),
            models.CheckConstraint(condition=Q(status__in=["proposed", "accepted", "rejected"]),
                                   name="txn_recommendation_status_valid"),
        ]


class RuleDraft(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        # Proposed to monitoring (a shadow-mode version awaiting another manager's approval):
        # what it became is `monitoring` (the detection rule's version), not this word.
        PROMOTED = "promoted", "Proposed to monitoring"

    investigation = models.OneToOneField(Investigation, on_delete=models.CASCADE, related_name="rule_draft")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    # [{"field": "amount", "op": "gte", "value": 500}, ...]: all must hold (casework.transactions.rules).
    conditions = models.JSONField(default=list)
    backtest = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    promoted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="+")
    promoted_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-promoted_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["draft", "promoted"]), name="txn_rule_status_valid"),
            models.CheckConstraint(condition=Q(status="draft") | Q(promoted_at__isnull=False),
                                   name="txn_rule_promoted_has_time"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def conditions_json(self) -> str:
        return json.dumps(self.conditions, indent=1)

    @property
    def described(self) -> str:
        from casework.transactions.rules import describe

        return describe(self.conditions)

    def monitoring_version(self):
        """The newest version of the detection rule it was proposed as, or None (a draft)."""
        if self.status != self.Status.PROMOTED:
            return None
        return RuleVersion.objects.filter(rule__drafted_from=self).order_by("-created_at", "-id").first()

    @property
    def standing(self) -> dict:
        """What the rule is, from the monitoring record (the approval is the fact "live" or
        "approved" rests on): {"key", "label", "tone"}. Green only once another manager
        approved it and it runs."""
        version = self.monitoring_version()
        if version is None:
            return {"key": "draft", "label": "Draft", "tone": ""}
        mode = "in shadow mode" if version.mode == version.Mode.SHADOW else "live"
        if version.status == version.Status.PROPOSED:
            return {"key": "proposed", "label": f"Proposed, {mode}: awaiting approval", "tone": "badge-warn"}
        if version.status == version.Status.REJECTED:
            return {"key": "rejected", "label": "Proposal rejected", "tone": "badge-error"}
        if version.status == version.Status.ACTIVE:
            return {"key": "active", "label": f"Approved, running {mode}", "tone": "badge-ok"}
        return {"key": "approved", "label": f"Approved ({mode}), not running", "tone": ""}


# Counters for the rule language's aggregates.
from casework.transactions.aggregates.models import (  # noqa: E402,F401
    AggregateBucket,
    AggregateDistinct,
    AggregateSeries,
)

# Transaction monitoring (rates, detection rules, hits), authorisation-time decisions and
# allow/deny lists live in their own modules.
from casework.transactions.decisions.models import Decision  # noqa: E402,F401
from casework.transactions.lists.models import ListEntry, ValueList  # noqa: E402,F401
from casework.transactions.monitoring.models import (  # noqa: E402,F401
    CurrencyRate,
    DetectionRule,
    RuleHit,
    RuleVersion,
)
