"""Admin for accounts, alerts and knowledge patterns.

An alert added here goes through `alert_create` like any other (case, scores, audit,
pipeline). A saved alert is evidence: its page is read-only, and it is never deleted.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError

from audit.admin_scope import CaseScopedAdmin
from casework.fraud.features import FEATURE_NAMES, SCORE_NAMES
from casework.fraud.models import Account, Alert, KnowledgePattern
from casework.fraud.schemas import alert_validate


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ("account_id", "alert_count", "created_at", "updated_at")
    search_fields = ("account_id",)
    readonly_fields = ("created_at", "updated_at")

    @admin.display(description="Alerts")
    def alert_count(self, obj: Account) -> int:
        return obj.alerts.count()


class AlertAddForm(forms.ModelForm):
    """The admin's add form: an account id instead of the account, scores optional.

    The score fields are plain form fields, not the model's: blank means "let the scorer
    fill it", which the model's constraints would refuse before the service fills it.
    """

    account_id = forms.CharField(max_length=64, help_text="Created if it does not exist yet.")
    fraud_probability = forms.FloatField(required=False, min_value=0, max_value=1)
    anomaly_score = forms.FloatField(required=False, min_value=0, max_value=1)
    risk_level = forms.ChoiceField(required=False, choices=[("", "(let the scorer decide)"),
                                                            *Alert.RiskLevel.choices])
    one_line_explanation = forms.CharField(required=False, max_length=500)
    risk_factors = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                                   help_text="One risk factor per line.")

    class Meta:
        model = Alert
        fields = list(FEATURE_NAMES)

    def clean_risk_factors(self):
        return [line.strip() for line in self.cleaned_data["risk_factors"].splitlines() if line.strip()]

    def clean(self):
        cleaned = super().clean()
        data = {"account_id": cleaned.get("account_id")}
        for name in (*FEATURE_NAMES, *SCORE_NAMES):
            value = cleaned.get(name)
            if value not in (None, "", []):
                data[name] = value
        try:
            self.alert_data = alert_validate(data).model_dump(exclude_none=True)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                for message in messages:
                    self.add_error(None if field == "__all__" or field not in self.fields else field, message)
        return cleaned


@admin.register(Alert)
class AlertAdmin(CaseScopedAdmin, admin.ModelAdmin):
    list_display = ("case", "account", "status", "risk_level", "fraud_probability", "score_source", "case_status",
                    "created_at")
    list_filter = ("status", "risk_level", "score_source", "case__status", "case__priority")
    search_fields = ("case__reference", "case__title", "account__account_id")
    autocomplete_fields = ("account", "case")
    list_select_related = ("case", "account")
    date_hierarchy = "created_at"

    @admin.display(description="Case status", ordering="case__status")
    def case_status(self, obj: Alert) -> str:
        return obj.case.get_status_display()

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = AlertAddForm
            kwargs["fields"] = list(FEATURE_NAMES)
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return [(None, {"fields": ["account_id"]}),
                    ("Features", {"fields": list(FEATURE_NAMES)}),
                    ("Upstream scores (optional; the scorer fills what is left blank)",
                     {"fields": list(SCORE_NAMES)})]
        return super().get_fieldsets(request, obj)

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return [f.name for f in Alert._meta.fields]

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        if change:
            return  # read-only
        from casework.fraud.services import alert_create

        created = alert_create(actor=request.user, data=form.alert_data, via="admin")
        for field in Alert._meta.concrete_fields:
            setattr(obj, field.attname, getattr(created, field.attname))
        obj._state.adding = False


@admin.register(KnowledgePattern)
class KnowledgePatternAdmin(CaseScopedAdmin, admin.ModelAdmin):
    list_display = ("case", "account", "final_outcome", "one_sentence_description", "created_at")
    list_filter = ("final_outcome",)
    search_fields = ("case__reference", "account__account_id", "behavioral_pattern", "one_sentence_description")
    list_select_related = ("case", "account")
    readonly_fields = ("decision", "case", "account", "created_at", "updated_at")

    def has_add_permission(self, request):
        # Patterns come from closing a case (knowledge capture), not from a blank form.
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        # Through the service, so the decision's copy and the audit trail follow the edit.
        from casework.fraud.services import pattern_capture

        pattern = {name: getattr(obj, name) for name in
                   ("key_signals", "behavioral_pattern", "final_outcome", "one_sentence_description")}
        saved = pattern_capture(decision=obj.decision, pattern=pattern, actor=request.user)
        obj.pk, obj.updated_at = saved.pk, saved.updated_at
