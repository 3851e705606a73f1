from __future__ import annotations

from django import forms

from casework.budgets.services import REASON_MAX_LENGTH, TOKENS_MAX, USD_MAX


class BudgetForm(forms.Form):
    """A lead sets this case's budget; an empty limit is no limit of that kind."""

    limit_usd = forms.DecimalField(label="Money (US$)", required=False, min_value=0, max_value=USD_MAX,
                                   decimal_places=6, widget=forms.NumberInput(attrs={"step": "0.01"}))
    limit_tokens = forms.IntegerField(label="Tokens", required=False, min_value=0, max_value=TOKENS_MAX)
    reason = forms.CharField(max_length=REASON_MAX_LENGTH, widget=forms.Textarea(attrs={"rows": 2}))


class StopForm(forms.Form):
    reason = forms.CharField(max_length=REASON_MAX_LENGTH, widget=forms.Textarea(attrs={"rows": 2}))
