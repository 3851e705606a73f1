"""Fraud alerts: the account, the alert that opened a case, and patterns captured on close.

Ranges live in the database as CHECK constraints (non-negative counts and totals, scores
between 0 and 1, percentages up to 100), so no path around the services can store an
impossible alert. Alerts are created only by `casework.fraud.services.alert_create`.
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from casework.cases.models import Case, Decision
from casework.fraud.features import FEATURE_NAMES, FEATURES
from casework.fraud.states import AlertStatus


class Account(models.Model):
    account_id = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["account_id"]

    def __str__(self) -> str:
        return self.account_id


class AccountLink(models.Model):
    """A device or an IP address an account was seen on (from the alert that reported it).
    Accounts that share one are linked; `known_fraud_links` counts the linked accounts whose
    fraud case a person confirmed."""

    class Kind(models.TextChoices):
        DEVICE = "device", "Device"
        IP = "ip", "IP address"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="links")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    value = models.CharField(max_length=128)
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["account", "kind", "value"], name="fraud_account_link_unique"),
            models.CheckConstraint(condition=Q(kind__in=["device", "ip"]), name="fraud_account_link_kind_valid"),
        ]
        indexes = [models.Index(fields=["kind", "value"])]

    def __str__(self) -> str:
        return f"{self.account} on {self.kind} {self.value}"


def _range_constraints() -> list[models.CheckConstraint]:
    constraints = []
    for feature in FEATURES:
        condition = Q(**{f"{feature.name}__gte": 0})
        if feature.maximum is not None:
            condition &= Q(**{f"{feature.name}__lte": feature.maximum})
        constraints.append(models.CheckConstraint(condition=condition, name=f"fraud_alert_{feature.name}_range"))
    return constraints


class Alert(models.Model):
    class RiskLevel(models.TextChoices):
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"
        CRITICAL = "critical", "Critical"

    class ScoreSource(models.TextChoices):
        UPSTREAM = "upstream", "Upstream model"
        CASEWORK_SCORER = "casework_scorer", "Casework scorer"

    case = models.OneToOneField(Case, on_delete=models.PROTECT, related_name="fraud_alert")
    # Where the alert stands (casework/fraud/states.py); written only through alert_transition.
    status = models.CharField(max_length=20, choices=AlertStatus.choices, default=AlertStatus.RECEIVED,
                              db_index=True)
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="alerts")

    # The 13 raw features, named as upstream names them (see casework/fraud/features.py).
    declared_income_annual = models.FloatField()
    deposits_total = models.FloatField()
    deposits_count = models.PositiveIntegerField()
    withdrawals_total = models.FloatField()
    withdrawals_count = models.PositiveIntegerField()
    deposit_withdraw_cycle_days_avg = models.FloatField()
    deposits_vs_income_ratio = models.FloatField()
    kyc_face_match_score = models.FloatField(help_text="0 to 1; 1 is a certain match.")
    account_age_days = models.PositiveIntegerField()
    vpn_usage_pct = models.FloatField(help_text="0 to 100.")
    countries_accessed_count = models.PositiveIntegerField()
    device_shared_count = models.PositiveIntegerField()
    ip_shared_count = models.PositiveIntegerField()

    # The upstream model's outputs, or our scorer's when upstream sent none. Always filled
    # once saved; blank=True only so that a form may leave them for the scorer.
    fraud_probability = models.FloatField(blank=True, help_text="0 to 1.")
    anomaly_score = models.FloatField(blank=True, help_text="0 to 1.")
    risk_level = models.CharField(max_length=10, choices=RiskLevel.choices, blank=True)
    one_line_explanation = models.CharField(max_length=500, blank=True)
    risk_factors = models.JSONField(default=list, blank=True)
    score_source = models.CharField(max_length=20, choices=ScoreSource.choices, blank=True)
    # When upstream sent some of the five score fields, the ones our scorer filled in.
    scorer_filled = models.JSONField(default=list, blank=True)

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            *_range_constraints(),
            models.CheckConstraint(condition=Q(fraud_probability__gte=0, fraud_probability__lte=1),
                                   name="fraud_alert_fraud_probability_range"),
            models.CheckConstraint(condition=Q(anomaly_score__gte=0, anomaly_score__lte=1),
                                   name="fraud_alert_anomaly_score_range"),
            models.CheckConstraint(condition=Q(risk_level__in=["low", "medium", "high", "critical"]),
                                   name="fraud_alert_risk_level_valid"),
            models.CheckConstraint(condition=Q(score_source__in=["upstream", "casework_scorer"]),
                                   name="fraud_alert_score_source_valid"),
            models.CheckConstraint(condition=Q(status__in=AlertStatus.values), name="fraud_alert_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.case.reference} {self.account.account_id}"

    @property
    def features(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in FEATURE_NAMES}

    @property
    def feature_items(self) -> list[tuple[str, float, str]]:
        """(name, value, description) for each feature, in the upstream order, for templates."""
        return [(f.name, getattr(self, f.name), f.description) for f in FEATURES]

    @property
    def scores(self) -> dict:
        return {
            "fraud_probability": self.fraud_probability,
            "anomaly_score": self.anomaly_score,
            "risk_level": self.risk_level,
            "one_line_explanation": self.one_line_explanation,
            "risk_factors": list(self.risk_factors),
        }

    @property
    def share_withdrawn(self) -> float | None:
        return self.withdrawals_total / self.deposits_total if self.deposits_total else None


class KnowledgePattern(models.Model):
    """What a closed fraud case taught us (the knowledge_capture agent's output).

    One per final decision; capturing again (a re-run of knowledge capture) updates it.
    A copy is kept in `decision.data["knowledge_pattern"]` so that the decision carries it.
    """

    decision = models.OneToOneField(Decision, on_delete=models.CASCADE, related_name="knowledge_pattern")
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="knowledge_patterns")
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="knowledge_patterns")
    key_signals = models.JSONField(default=list)
    behavioral_pattern = models.TextField()
    final_outcome = models.CharField(max_length=100)
    one_sentence_description = models.CharField(max_length=500)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=~Q(behavioral_pattern=""), name="fraud_pattern_behavior_required"),
            models.CheckConstraint(condition=~Q(one_sentence_description=""),
                                   name="fraud_pattern_description_required"),
        ]

    def __str__(self) -> str:
        return f"{self.case.reference}: {self.one_sentence_description[:60]}"


# The standardised coordinates (features.py: transform / scale) that place a decided alert in
# a coarse grid cell for the bounded look-alike search (casework/fraud/similarity.py). These
# three split the demo population into the most cells; any three keep the search exact
# below the cap, only the number of alerts a cell holds changes.
CELL_FEATURES: tuple[str, ...] = ("kyc_face_match_score", "withdrawals_total", "deposit_withdraw_cycle_days_avg")
CELL_SIDE = 3.0  # the grid's side in standardised units: SIMILAR_MAX_DISTANCE
CELL_INDEXES: tuple[int, ...] = tuple(FEATURE_NAMES.index(name) for name in CELL_FEATURES)


# The look-alike search's order within a cell, newest decision first, and the cell index's last
# column. An expression rather than "decision_id DESC": the primary key gives that order too,
# and when the planner cannot see how full a cell is (the search's LATERAL ranges), it walked
# the primary key backwards filtering for the cell: 50 to 220 ms a search at 10^5 decided
# alerts, for a sparse cell, against 1 ms through the cell index (bench/README.md, issue 29).
NEWEST_FIRST = "decision_id * -1"


def cell_key(cells: tuple[int, ...]) -> int:
    """One integer for a cell's three grid coordinates (each 0 to 99)."""
    a, b, c = (max(0, min(99, int(k))) for k in cells)
    return a * 10_000 + b * 100 + c


class DecidedVector(models.Model):
    """A fraud alert whose case a person decided (confirmed fraud, legit or false positive),
    with its 13 standardised features: what the look-alike search reads instead of every
    decided alert. Written in the decision's own transaction (casework/fraud/signals.py);
    deleted with the decision. `cell` is the alert's grid cell; the index on (confirmed,
    cell, NEWEST_FIRST) lets the search read the newest N decided alerts of each cell near a
    new alert, whatever the size of the history."""

    decision = models.OneToOneField(Decision, primary_key=True, on_delete=models.CASCADE, related_name="+")
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="+")
    confirmed = models.BooleanField(help_text="Confirmed fraud; otherwise cleared (legit or false positive).")
    outcome = models.CharField(max_length=40)
    reference = models.CharField(max_length=32)
    account_id = models.CharField(max_length=64)
    cell = models.IntegerField()
    v0 = models.FloatField()
    v1 = models.FloatField()
    v2 = models.FloatField()
    v3 = models.FloatField()
    v4 = models.FloatField()
    v5 = models.FloatField()
    v6 = models.FloatField()
    v7 = models.FloatField()
    v8 = models.FloatField()
    v9 = models.FloatField()
    v10 = models.FloatField()
    v11 = models.FloatField()
    v12 = models.FloatField()

    class Meta:
        # The last expression is NEWEST_FIRST (the search's ORDER BY must match it exactly; the
        # plan tests in tests/fraud/test_lookalike_bounds.py fail if the two part).
        indexes = [models.Index(F("confirmed"), F("cell"), F("decision") * -1, name="fraud_decided_cell_rank")]

    def __str__(self) -> str:
        return f"{self.reference}: {self.outcome}"
