from __future__ import annotations

from django.apps import AppConfig


class BudgetsConfig(AppConfig):
    """Budgets per case: prices, each case type's budget, a lead's override, and the charger the
    agent runtime calls around every model call made for a case (casework/budgets/ledger.py)."""

    name = "casework.budgets"
    label = "budgets"
    verbose_name = "Budgets"

    def ready(self) -> None:
        from agents.runtime.charging import charger_register
        from casework.budgets.ledger import BudgetCharger

        charger_register(BudgetCharger())
        # "Budget reached" and the moves out of it are in the run's one lifecycle (agents/run_lifecycle.py).
