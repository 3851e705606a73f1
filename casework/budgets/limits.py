"""A case type's budget: the admin's (CaseTypeBudget), else settings.CASE_BUDGETS (the type's
entry, else "*"). Money as micro-dollars (µ$), None for no limit."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from django.conf import settings

from casework.budgets.models import MICRO, CaseTypeBudget


@dataclass(frozen=True)
class Limits:
    musd: int | None
    tokens: int | None
    source: str  # "admin" or "settings"

    @property
    def usd(self) -> Decimal | None:
        return None if self.musd is None else Decimal(self.musd) / MICRO


def to_musd(usd) -> int | None:
    """US$ (a number, Decimal or str) as whole micro-dollars, rounded up."""
    if usd is None:
        return None
    return int((Decimal(str(usd)) * MICRO).to_integral_value(rounding=ROUND_CEILING))


def settings_limits(case_type: str) -> Limits:
    entry = settings.CASE_BUDGETS.get(case_type, settings.CASE_BUDGETS.get("*", {}))
    tokens = entry.get("tokens")
    return Limits(to_musd(entry.get("usd")), None if tokens is None else int(tokens), "settings")


def type_limits(case_type: str) -> Limits:
    row = CaseTypeBudget.objects.filter(case_type=case_type).first()
    if row is None:
        return settings_limits(case_type)
    return Limits(to_musd(row.limit_usd), row.limit_tokens, "admin")


def usd_text(musd: int | None) -> str:
    """"$5.00" (cents when whole cents say it all, else up to six places), "no limit" for None."""
    if musd is None:
        return "no limit"
    value = Decimal(musd) / MICRO
    text = f"{value:,.2f}" if value == value.quantize(Decimal("0.01")) else f"{value.normalize():,f}"
    return f"${text}"
