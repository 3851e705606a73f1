"""Budgets: per case type (the admin's, else settings.CASE_BUDGETS) and per case (its ledger).

A case's ledger row holds its effective limits (copied from its type when first charged, or a
lead's override), what its finished calls spent, and what calls in flight have reserved. The
reservation is one conditional UPDATE of this row (casework/budgets/ledger.py); the database
checks the limit in the same statement that takes the reservation, so parallel calls cannot
pass it together.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from casework.cases.types import case_type_choices

MONEY = {"max_digits": 14, "decimal_places": 6}
MICRO = Decimal(1_000_000)


class CaseTypeBudget(models.Model):
    """The budget of every case of a type, set in the admin (over settings.CASE_BUDGETS).
    Empty limits mean no limit of that kind."""

    case_type = models.CharField(max_length=40, unique=True, choices=case_type_choices)
    limit_usd = models.DecimalField(null=True, blank=True, help_text="US$ per case; empty: no money limit.",
                                    **MONEY)
    limit_tokens = models.BigIntegerField(null=True, blank=True, help_text="Tokens per case; empty: no token limit.")
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["case_type"]
        verbose_name = "case type budget"
        constraints = [
            models.CheckConstraint(condition=Q(limit_usd__isnull=True) | Q(limit_usd__gte=0),
                                   name="casetypebudget_usd_not_negative"),
            models.CheckConstraint(condition=Q(limit_tokens__isnull=True) | Q(limit_tokens__gte=0),
                                   name="casetypebudget_tokens_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.case_type} budget"


class CaseBudget(models.Model):
    """One case's ledger, money in micro-dollars (µ$, integers: the same exact arithmetic on
    PostgreSQL and SQLite). Written by the reservation's SQL and the services, never saved whole
    (its counters move under concurrent calls). Empty limits mean no limit of that kind."""

    case = models.OneToOneField("cases.Case", primary_key=True, on_delete=models.CASCADE, related_name="budget")
    case_type = models.CharField(max_length=40)
    limit_musd = models.BigIntegerField(null=True, blank=True)
    limit_tokens = models.BigIntegerField(null=True, blank=True)
    # A lead set this case's limits: a change of its type's budget no longer applies to it.
    overridden = models.BooleanField(default=False)
    spent_musd = models.BigIntegerField(default=0)
    spent_tokens = models.BigIntegerField(default=0)
    reserved_musd = models.BigIntegerField(default=0)
    reserved_tokens = models.BigIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)
    refused = models.PositiveIntegerField(default=0)
    # The assignee was warned at CASE_BUDGET_WARN_RATIO (once; cleared when a lead raises it).
    warned_at = models.DateTimeField(null=True, blank=True)
    # A call was refused and nobody has raised the budget since: the case "hit its budget".
    reached_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["reached_at"], name="casebudget_reached",
                                condition=Q(reached_at__isnull=False))]
        constraints = [
            models.CheckConstraint(condition=Q(reserved_musd__gte=0) & Q(reserved_tokens__gte=0),
                                   name="casebudget_reserved_not_negative"),
        ]

    def __str__(self) -> str:
        return f"budget of case {self.case_id}"

    @property
    def limit_usd(self) -> Decimal | None:
        return None if self.limit_musd is None else Decimal(self.limit_musd) / MICRO

    @property
    def spent_usd(self) -> Decimal:
        return Decimal(self.spent_musd) / MICRO

    def share(self) -> float | None:
        """The larger of spent / limit over the limits there are (None: no limit)."""
        shares = []
        if self.limit_musd is not None:
            shares.append(self.spent_musd / self.limit_musd if self.limit_musd else 1.0)
        if self.limit_tokens is not None:
            shares.append(self.spent_tokens / self.limit_tokens if self.limit_tokens else 1.0)
        return max(shares) if shares else None


class BudgetHold(models.Model):
    """What one process holds reserved in one case's ledger (its calls in flight and its lease):
    moved in the same statement as the ledger's reserved counters (casework/budgets/ledger.py),
    so a case's `reserved` is the sum of its holds. The process renews its holds while it has
    any (every CASE_BUDGET_HOLD_STALE_SECONDS / 4); a hold whose process is gone (not renewed
    for CASE_BUDGET_HOLD_STALE_SECONDS, or a pid on this host that no longer runs) is given back
    to its case by the sweep (casework/budgets/holds.py), audited: a killed worker's
    reservations do not stay reserved for ever."""

    holder = models.CharField(max_length=64, help_text="The process: host, pid and a random token.")
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="+")
    reserved_musd = models.BigIntegerField(default=0)
    reserved_tokens = models.BigIntegerField(default=0)
    renewed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["holder", "case"], name="budgethold_one_per_holder_case")]
        indexes = [models.Index(fields=["renewed_at"], name="budgethold_renewed")]

    def __str__(self) -> str:
        return f"hold of {self.host}:{self.pid} on case {self.case_id}"
