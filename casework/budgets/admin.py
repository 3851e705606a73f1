"""Budgets in the admin: each case type's budget (edited here, saved through the audited
service), every case's ledger and what each process holds reserved in it (read-only,
need-to-know scoped), and the price table of
settings.LLM_PRICES (read-only, shown above the type budgets)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin

from agents.llm.prices import price_table
from audit.admin_scope import CaseScopedAdmin, ReadOnlyRows
from casework.budgets.limits import settings_limits, usd_text
from casework.budgets.models import BudgetHold, CaseBudget, CaseTypeBudget
from casework.budgets.services import case_type_budget_set
from casework.cases.types import CASE_TYPES


@admin.register(CaseTypeBudget)
class CaseTypeBudgetAdmin(admin.ModelAdmin):
    """The budget of every case of a type. Saving applies it to the type's cases that no lead
    overrode (case_type_budget_set, audited); a type with no row here has settings.CASE_BUDGETS'."""

    list_display = ("case_type", "limit_usd", "limit_tokens", "updated_by", "updated_at")
    fields = ("case_type", "limit_usd", "limit_tokens")

    def has_delete_permission(self, request, obj=None):
        return False  # a type's budget is changed, never removed: its cases keep their limits

    def get_readonly_fields(self, request, obj=None):
        return ("case_type",) if obj else ()

    def save_model(self, request, obj, form, change):
        saved = case_type_budget_set(actor=request.user, case_type=obj.case_type, limit_usd=obj.limit_usd,
                                     limit_tokens=obj.limit_tokens)
        obj.pk = saved.pk

    def changelist_view(self, request, extra_context=None):
        defaults = []
        for key, case_type in CASE_TYPES.items():
            limits = settings_limits(key)
            defaults.append({"key": key, "label": case_type.label, "usd": usd_text(limits.musd),
                             "tokens": "no limit" if limits.tokens is None else f"{limits.tokens:,}"})
        extra = {"prices": price_table(), "settings_defaults": defaults,
                 "warn_percent": round(100 * settings.CASE_BUDGET_WARN_RATIO),
                 "budgets_enabled": settings.CASE_BUDGETS_ENABLED}
        return super().changelist_view(request, extra_context={**(extra_context or {}), **extra})


@admin.register(CaseBudget)
class CaseBudgetAdmin(CaseScopedAdmin, ReadOnlyRows, admin.ModelAdmin):
    """Read-only: a case's budget changes through a lead (the case page, the API), its spend
    through the reservations."""

    list_display = ("case", "case_type", "spent", "limit", "spent_tokens", "limit_tokens", "calls", "refused",
                    "overridden", "reached_at")
    list_filter = ("case_type", "overridden")
    search_fields = ("case__reference",)
    list_select_related = ("case",)
    readonly_fields = [f.name for f in CaseBudget._meta.fields]

    @admin.display(description="spent")
    def spent(self, obj):
        return usd_text(obj.spent_musd)

    @admin.display(description="limit")
    def limit(self, obj):
        return usd_text(obj.limit_musd)


@admin.register(BudgetHold)
class BudgetHoldAdmin(CaseScopedAdmin, ReadOnlyRows, admin.ModelAdmin):
    """Read-only: what each worker process holds reserved in a case's ledger (casework/budgets/
    holds.py); a gone process's are given back by the sweep, audited."""

    list_display = ("case", "host", "pid", "reserved", "reserved_tokens", "renewed_at")
    search_fields = ("case__reference", "host")
    list_select_related = ("case",)
    readonly_fields = [f.name for f in BudgetHold._meta.fields]

    @admin.display(description="reserved")
    def reserved(self, obj):
        return usd_text(obj.reserved_musd)
