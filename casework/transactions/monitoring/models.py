"""Transaction monitoring: exchange rates, detection rules with versions, and their hits.

A DetectionRule is a name; what it does is in its versions. A version has conditions (the
declarative language of casework.transactions.rules), an action (allow, review, block), a
mode (shadow: hits are recorded, no case; live: hits open or join cases), an author and an
approver who is not the author. At most one version of a rule is active; activating an
earlier one is the rollback. Every change goes through casework/transactions/monitoring/
services.py, which audits it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from casework.cases.models import Case


class CurrencyRate(models.Model):
    """How many units of the settlement currency (SETTLEMENT_CURRENCY) one unit of `currency`
    is worth. Ingest converts every amount with it, so rules compare like with like."""

    currency = models.CharField(max_length=3, unique=True)
    rate = models.DecimalField(max_digits=18, decimal_places=8)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["currency"]
        constraints = [models.CheckConstraint(condition=Q(rate__gt=0), name="txn_rate_positive")]

    def __str__(self) -> str:
        return f"1 {self.currency} = {self.rate} {settings.SETTLEMENT_CURRENCY}"


class DetectionRule(models.Model):
    name = models.CharField(max_length=120, unique=True)
    description = models.TextField(blank=True)
    # The drafted rule it was promoted from, if any: its back-test excludes that
    # investigation's transactions (they are what the rule was written from).
    drafted_from = models.ForeignKey("transactions.RuleDraft", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="detection_rules")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class RuleVersion(models.Model):
    class Action(models.TextChoices):
        ALLOW = "allow", "Allow"
        REVIEW = "review", "Review"
        BLOCK = "block", "Block"

    class Mode(models.TextChoices):
        SHADOW = "shadow", "Shadow (hits recorded, no case)"
        LIVE = "live", "Live (hits open cases)"

    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed, awaiting approval"
        APPROVED = "approved", "Approved, not active"
        ACTIVE = "active", "Active"
        REJECTED = "rejected", "Rejected"

    rule = models.ForeignKey(DetectionRule, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    conditions = models.JSONField()
    action = models.CharField(max_length=8, choices=Action.choices)
    mode = models.CharField(max_length=8, choices=Mode.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROPOSED)
    note = models.TextField(blank=True, help_text="Why this version: what changed.")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    approver = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+")
    created_at = models.DateTimeField()
    approved_at = models.DateTimeField(null=True, blank=True)
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["rule", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["rule", "number"], name="txn_rule_version_unique"),
            models.UniqueConstraint(fields=["rule"], condition=Q(status="active"), name="txn_rule_one_active"),
            models.CheckConstraint(condition=Q(action__in=["allow", "review", "block"]),
                                   name="txn_rule_action_valid"),
            models.CheckConstraint(condition=Q(mode__in=["shadow", "live"]), name="txn_rule_mode_valid"),
            models.CheckConstraint(condition=Q(status__in=["proposed", "approved", "active", "rejected"]),
                                   name="txn_rule_version_status_valid"),
            # Four eyes: an approved or active version names an approver, and it is not its author.
            models.CheckConstraint(condition=Q(status__in=["proposed", "rejected"]) | (
                Q(approver__isnull=False) & ~Q(approver=models.F("author"))), name="txn_rule_approver_not_author"),
        ]
        indexes = [models.Index(fields=["status"], name="txn_rule_version_status")]

    def __str__(self) -> str:
        return f"{self.rule.name} v{self.number}"

    @property
    def described(self) -> str:
        from casework.transactions.rules import describe

        return describe(self.conditions)

    @property
    def conditions_json(self) -> str:
        import json

        return json.dumps(self.conditions)


class RuleHit(models.Model):
    """A rule version matched a transaction. Live review/block hits carry the case they opened
    or joined; shadow and allow hits carry none."""

    version = models.ForeignKey(RuleVersion, on_delete=models.PROTECT, related_name="hits")
    transaction = models.ForeignKey("transactions.Transaction", on_delete=models.PROTECT, related_name="rule_hits")
    mode = models.CharField(max_length=8, choices=RuleVersion.Mode.choices)
    action = models.CharField(max_length=8, choices=RuleVersion.Action.choices)
    case = models.ForeignKey(Case, null=True, blank=True, on_delete=models.PROTECT, related_name="rule_hits")
    # True for the hit whose transaction opened the case; later hits on the card joined it.
    opened_case = models.BooleanField(default=False)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["version", "transaction"], name="txn_one_hit_per_version")]
        indexes = [models.Index(fields=["version", "created_at"], name="txn_hit_version_time"),
                   models.Index(fields=["case", "created_at"], name="txn_hit_case_time")]


class CardCase(models.Model):
    """The case a card's live hits join: at most one current row per card, which the database
    holds (a partial unique constraint, enforced by SQLite and PostgreSQL alike).

    Evaluations run in parallel. Two of them that find no case for a new card both open one,
    and both try to insert the card's current row: the second insert fails (on PostgreSQL it
    waits for the first transaction and fails once that commits), its case is rolled back
    with its savepoint, and its hits join the winner's case. A row stops being current when
    a hit finds its case done or its last hit older than TXN_HIT_JOIN_MINUTES: that hit opens
    the card's next case (casework.transactions.monitoring.evaluate)."""

    # Derived rows (from the hits): they go with their case or account.
    account = models.ForeignKey("transactions.CardAccount", on_delete=models.CASCADE, related_name="card_cases")
    card_last4 = models.CharField(max_length=4)
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="card_cases")
    current = models.BooleanField(default=True)
    opened_at = models.DateTimeField()
    # The newest hit that opened or joined the case: the join window is measured from it.
    last_hit_at = models.DateTimeField()

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["account", "card_last4"], condition=Q(current=True),
                                               name="txn_one_current_case_per_card")]

    def __str__(self) -> str:
        return f"{self.account_id}/{self.card_last4}: {self.case_id}{'' if self.current else ' (past)'}"
