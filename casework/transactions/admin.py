"""Admin: card accounts and transactions are reference data; investigations and their
findings are read-only here (the pipeline and the case page write them)."""

from __future__ import annotations

from django.contrib import admin

from audit.admin_scope import CaseScopedAdmin
from casework.transactions.models import CardAccount, CurrencyRate, DetectionRule, Investigation, RuleDraft, Transaction


@admin.register(CardAccount)
class CardAccountAdmin(admin.ModelAdmin):
    list_display = ["account_id", "holder_name", "home_country"]
    search_fields = ["account_id", "holder_name"]


@admin.register(Transaction)
class TransactionAdmin(admin.ModelAdmin):
    list_display = ["transaction_id", "account", "amount", "currency", "merchant", "mcc", "country", "channel",
                    "occurred_at", "is_fraud"]
    list_filter = ["channel", "is_fraud", "country"]
    search_fields = ["transaction_id", "account__account_id", "merchant"]
    list_select_related = ["account"]
    date_hierarchy = "occurred_at"


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Investigation)
class InvestigationAdmin(CaseScopedAdmin, ReadOnly):
    list_display = ["case", "transaction", "status", "severity", "confidence_score", "completed_at"]
    list_filter = ["status", "severity"]
    search_fields = ["case__reference", "transaction__transaction_id"]
    list_select_related = ["case", "transaction"]


@admin.register(RuleDraft)
class RuleDraftAdmin(CaseScopedAdmin, ReadOnly):
    list_display = ["name", "status", "investigation", "promoted_by", "promoted_at"]
    list_filter = ["status"]


@admin.register(CurrencyRate)
class CurrencyRateAdmin(admin.ModelAdmin):
    """Rates are set through the audited service, here as on the API."""

    list_display = ["currency", "rate", "updated_at"]
    fields = ["currency", "rate"]

    def save_model(self, request, obj, form, change):
        from casework.transactions.monitoring.services import rate_set

        saved = rate_set(actor=request.user, currency=obj.currency, rate=obj.rate)
        obj.pk = saved.pk


@admin.register(DetectionRule)
class DetectionRuleAdmin(ReadOnly):
    """Rules change on the rules page or the API (four eyes, audited); read-only here."""

    list_display = ["name", "created_by", "created_at"]
