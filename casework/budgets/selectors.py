"""Reads of budgets: one case's spend against its budget, and the dashboard's spend per type
and cases at their budget, over the cases the person may see (casework.cases.visibility)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from agents.models import AgentRun
from casework.budgets.limits import type_limits, usd_text
from casework.budgets.models import CaseBudget
from casework.cases.models import Case
from casework.cases.types import CASE_TYPES
from casework.cases.visibility import visible_q

HIT_LIST_CAP = 20


@dataclass
class Spend:
    """A case's spend against its budget, as the case page and the API show it."""

    spent_musd: int
    spent_tokens: int
    reserved_musd: int
    reserved_tokens: int
    limit_musd: int | None
    limit_tokens: int | None
    overridden: bool
    calls: int
    refused: int
    reached: bool
    warned: bool

    @property
    def spent_usd_text(self) -> str:
        return usd_text(self.spent_musd)

    @property
    def limit_usd_text(self) -> str:
        return usd_text(self.limit_musd)

    @property
    def limit_usd_input(self) -> str:
        return "" if self.limit_musd is None else f"{self.limit_musd / 1_000_000:.2f}"

    def percent(self, spent: int, limit: int | None) -> int | None:
        if limit is None:
            return None
        return 100 if limit == 0 else min(999, round(100 * spent / limit))

    @property
    def usd_percent(self) -> int | None:
        return self.percent(self.spent_musd, self.limit_musd)

    @property
    def tokens_percent(self) -> int | None:
        return self.percent(self.spent_tokens, self.limit_tokens)


def case_spend(case: Case) -> Spend:
    """The case's ledger, or (never charged yet) nothing spent against its type's budget."""
    budget = CaseBudget.objects.filter(case=case).first()
    if budget is None:
        limits = type_limits(case.case_type)
        return Spend(0, 0, 0, 0, limits.musd, limits.tokens, False, 0, 0, False, False)
    return Spend(budget.spent_musd, budget.spent_tokens, budget.reserved_musd, budget.reserved_tokens,
                 budget.limit_musd, budget.limit_tokens, budget.overridden, budget.calls, budget.refused,
                 budget.reached_at is not None, budget.warned_at is not None)


def runs_waiting_for_budget(case: Case) -> list[AgentRun]:
    return list(AgentRun.objects.filter(case=case, status=AgentRun.Status.BUDGET_REACHED).order_by("created_at"))


def dashboard_budgets(user) -> dict:
    """Spend per case type and the cases at their budget (a call refused, not raised since), over
    the cases `user` may see; a capped list, the newest first."""
    rows = CaseBudget.objects.filter(visible_q(user, "case__"))
    per_type = {row["case_type"]: row for row in rows.order_by().values("case_type").annotate(
        spent=Sum("spent_musd"), tokens=Sum("spent_tokens"), cases=Count("pk"),
        hit=Count("pk", filter=Q(reached_at__isnull=False)))}
    types = [{"key": key, "label": ct.label, "spent": usd_text(per_type.get(key, {}).get("spent") or 0),
              "tokens": per_type.get(key, {}).get("tokens") or 0, "cases": per_type.get(key, {}).get("cases") or 0,
              "hit": per_type.get(key, {}).get("hit") or 0}
             for key, ct in CASE_TYPES.items() if key in per_type]
    hit = (rows.filter(reached_at__isnull=False).select_related("case").order_by("-reached_at")[:HIT_LIST_CAP])
    return {"types": types, "hit": [{"case": b.case, "spent": usd_text(b.spent_musd), "limit": usd_text(b.limit_musd),
                                     "tokens": b.spent_tokens, "limit_tokens": b.limit_tokens,
                                     "reached_at": b.reached_at} for b in hit],
            "hit_total": sum(t["hit"] for t in types)}
