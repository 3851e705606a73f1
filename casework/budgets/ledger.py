"""The reservation: the Charger the runtime calls around every model call made for a case
(agents/runtime/charging.py), registered from BudgetsConfig.ready.

reserve: ONE statement, the conditional UPDATE
    UPDATE budgets_casebudget SET reserved = reserved + x
    WHERE case = (the case named) AND spent + reserved + x <= limit      (money and tokens)
The database checks the limit in the statement that takes the reservation. On PostgreSQL a
second UPDATE of the row waits for the first to commit and evaluates its WHERE again against
the row the first left (READ COMMITTED), so two calls can never both pass on the same headroom;
on SQLite every write holds the database's one write lock, which serialises them the same way.
So the calls that pass have reservations that together fit the limit; a call can only exceed
its own estimate (the prompt is estimated, about 8% over on prose), never by another call's.

settle: after the call, its reservation is exchanged for its real usage (one UPDATE). release:
a failed call gives its reservation back. Both run on the runtime's budget pool (autocommit).

The slow paths (the case's first call, which creates its ledger row; a refusal; the 80%
warning) read and write more, and only then.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from agents.llm.errors import BudgetReached
from agents.llm.prices import price_for
from casework.budgets.limits import type_limits, usd_text
from casework.budgets.models import CaseBudget
from casework.cases.models import Case

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reservation:
    case_id: int
    musd: int
    tokens: int


def estimate_musd(provider: str, model: str, input_tokens: int, output_tokens: int) -> int:
    """The call's price in whole micro-dollars, rounded up (0 for a model with no price)."""
    price = price_for(provider, model)
    if price is None:
        return 0
    return math.ceil(input_tokens * price.input_per_million + output_tokens * price.output_per_million)


def _sql() -> dict[str, str]:
    qn = connection.ops.quote_name
    budget, case = qn(CaseBudget._meta.db_table), qn(Case._meta.db_table)
    return {
        "reserve": (
            f"UPDATE {budget} SET reserved_musd = reserved_musd + %s, reserved_tokens = reserved_tokens + %s "
            f"WHERE case_id = (SELECT id FROM {case} WHERE reference = %s) "
            "AND (limit_musd IS NULL OR spent_musd + reserved_musd + %s <= limit_musd) "
            "AND (limit_tokens IS NULL OR spent_tokens + reserved_tokens + %s <= limit_tokens) "
            "RETURNING case_id"),
        "settle": (
            f"UPDATE {budget} SET reserved_musd = reserved_musd - %s, reserved_tokens = reserved_tokens - %s, "
            "spent_musd = spent_musd + %s, spent_tokens = spent_tokens + %s, calls = calls + 1 "
            "WHERE case_id = %s RETURNING spent_musd, spent_tokens, limit_musd, limit_tokens, warned_at"),
        "release": (
            f"UPDATE {budget} SET reserved_musd = reserved_musd - %s, reserved_tokens = reserved_tokens - %s "
            "WHERE case_id = %s"),
    }


_statements: dict[str, dict[str, str]] = {}


def _statement(name: str) -> str:
    table = _statements.get(connection.vendor)
    if table is None:
        table = _statements[connection.vendor] = _sql()
    return table[name]


class BudgetCharger:
    """agents.runtime.charging.Charger for case budgets."""

    def reserve(self, *, case: str, provider: str, model: str, input_tokens: int,
                max_output_tokens: int) -> Reservation | None:
        musd = estimate_musd(provider, model, input_tokens, max_output_tokens)
        tokens = input_tokens + max_output_tokens
        for _ in range(2):
            with connection.cursor() as cursor:
                cursor.execute(_statement("reserve"), [musd, tokens, case, musd, tokens])
                row = cursor.fetchone()
            if row is not None:
                return Reservation(case_id=row[0], musd=musd, tokens=tokens)
            budget = _ledger(case)
            if budget is None:
                return None  # no such case (deleted meanwhile): nothing to charge
            if not budget.get("created"):
                break  # the row was there: the limit refused it
        raise _refuse(case, musd, tokens)

    def settle(self, reservation: Reservation, *, provider: str, model: str, input_tokens: int,
               output_tokens: int) -> None:
        musd = estimate_musd(provider, model, input_tokens, output_tokens)
        with connection.cursor() as cursor:
            cursor.execute(_statement("settle"), [reservation.musd, reservation.tokens, musd,
                                                  input_tokens + output_tokens, reservation.case_id])
            row = cursor.fetchone()
        if row is None:
            return  # the case is gone
        spent_musd, spent_tokens, limit_musd, limit_tokens, warned_at = row
        if warned_at is None and _past_warning(spent_musd, spent_tokens, limit_musd, limit_tokens):
            from casework.budgets.services import budget_warn

            budget_warn(case_id=reservation.case_id)

    def release(self, reservation: Reservation) -> None:
        with connection.cursor() as cursor:
            cursor.execute(_statement("release"), [reservation.musd, reservation.tokens, reservation.case_id])


def _past_warning(spent_musd: int, spent_tokens: int, limit_musd: int | None, limit_tokens: int | None) -> bool:
    from django.conf import settings

    ratio = settings.CASE_BUDGET_WARN_RATIO
    return ((limit_musd is not None and spent_musd >= ratio * limit_musd)
            or (limit_tokens is not None and spent_tokens >= ratio * limit_tokens))


def _ledger(reference: str) -> dict | None:
    """The case's ledger row as {"created": bool}, made from its type's budget if it has none;
    None when there is no such case."""
    found = Case.objects.filter(reference=reference).values_list("pk", "case_type").first()
    if found is None:
        return None
    case_id, case_type = found
    if CaseBudget.objects.filter(case_id=case_id).exists():
        return {"created": False}
    limits = type_limits(case_type)
    try:
        with transaction.atomic():
            CaseBudget.objects.create(case_id=case_id, case_type=case_type, limit_musd=limits.musd,
                                      limit_tokens=limits.tokens)
    except IntegrityError:
        return {"created": False}  # another call made it first
    return {"created": True}


def _refuse(reference: str, musd: int, tokens: int) -> BudgetReached:
    """Record the refusal (the first since the last raise marks the case as at its budget and is
    audited) and say why, as the chat and the run panel show it."""
    from casework.budgets.services import budget_reached_record

    budget = CaseBudget.objects.select_related("case").get(case__reference=reference)
    money_short = budget.limit_musd is not None and budget.spent_musd + budget.reserved_musd + musd > budget.limit_musd
    if money_short or budget.limit_tokens is None:
        limit = usd_text(budget.limit_musd)
    else:
        limit = f"{budget.limit_tokens:,} tokens"
    message = f"This case has reached its budget of {limit}; a lead can raise it."
    budget_reached_record(budget=budget, estimate_musd=musd, estimate_tokens=tokens, message=message)
    return BudgetReached(message)
