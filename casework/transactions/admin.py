"""Admin: card accounts and transactions are reference data; investigations and their
findings are read-only here (the pipeline and the case page write them)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils import timezone

from audit.admin_scope import CaseScopedAdmin, ReadOnlyRows
from casework.transactions.models import (
    CardAccount,
    CurrencyRate,
    Decision,
    DetectionRule,
    Investigation,
    ListEntry,
    RuleDraft,
    Transaction,
    ValueList,
)


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


class ReadOnly(ReadOnlyRows, admin.ModelAdmin):
    pass


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


class ValueListForm(forms.ModelForm):
    """The service's checks, as form errors (never a 500 from save_model)."""

    class Meta:
        model = ValueList
        fields = ["name", "kind", "field", "description"]

    def clean_name(self):
        from casework.transactions.lists.services import NAME

        name = (self.cleaned_data.get("name") or "").strip().lower()
        if not NAME.fullmatch(name):
            raise ValidationError("Use lower-case letters, digits, - and _ (up to 60), e.g. deny-devices.")
        return name


class ListEntryForm(forms.ModelForm):
    class Meta:
        model = ListEntry
        fields = ["value_list", "value", "expires_at", "note"]

    def clean(self):
        from casework.transactions.lists.services import value_normalise

        data = super().clean()
        value_list = data.get("value_list") or (self.instance.value_list if self.instance.pk else None)
        if value_list is not None and data.get("value"):
            try:
                data["value"] = value_normalise(value_list.field, data["value"])
            except ValidationError as exc:
                self.add_error("value", exc.message_dict["value"])
        if data.get("expires_at") and data["expires_at"] <= timezone.now():
            self.add_error("expires_at", "The expiry must be in the future.")
        return data


@admin.register(ValueList)
class ValueListAdmin(admin.ModelAdmin):
    """Lists are made through the audited service; their entries on the list entries page."""

    form = ValueListForm
    list_display = ["name", "kind", "field", "created_by", "created_at"]
    list_filter = ["kind", "field"]
    fields = ["name", "kind", "field", "description"]

    def get_readonly_fields(self, request, obj=None):
        return ["name", "kind", "field", "description"] if obj else []

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        if change:
            return
        from casework.transactions.lists.services import value_list_create

        saved = value_list_create(actor=request.user, name=obj.name, kind=obj.kind, field=obj.field,
                                  description=obj.description)
        obj.pk = saved.pk


@admin.register(ListEntry)
class ListEntryAdmin(admin.ModelAdmin):
    """Adding, renewing and removing an entry go through the audited services."""

    form = ListEntryForm
    list_display = ["value", "value_list", "expires_at", "note", "added_by", "added_at"]
    list_filter = ["value_list"]
    search_fields = ["value", "note"]
    list_select_related = ["value_list", "added_by"]
    fields = ["value_list", "value", "expires_at", "note"]
    actions = ["remove_selected"]

    def get_readonly_fields(self, request, obj=None):
        return ["value_list", "value"] if obj else []

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def save_model(self, request, obj, form, change):
        from casework.transactions.lists.services import list_entry_add

        saved = list_entry_add(actor=request.user, value_list=obj.value_list, value=obj.value,
                               expires_at=obj.expires_at, note=obj.note)
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        from casework.transactions.lists.services import list_entry_remove

        list_entry_remove(actor=request.user, value_list=obj.value_list, value=obj.value)

    def delete_queryset(self, request, queryset):
        for entry in queryset.select_related("value_list"):
            self.delete_model(request, entry)

    @admin.action(description="Remove the selected entries (audited)")
    def remove_selected(self, request, queryset):
        self.delete_queryset(request, queryset)


@admin.register(Decision)
class DecisionAdmin(ReadOnly):
    """Decisions are what the API answered: read-only."""

    list_display = ["decision_id", "transaction", "outcome", "score", "timed_out", "latency_us", "created_at"]
    list_filter = ["outcome", "timed_out"]
    search_fields = ["transaction__transaction_id"]
    list_select_related = ["transaction"]
