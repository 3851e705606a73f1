from __future__ import annotations

import json

from django import forms

MAX_UPLOAD_BYTES = 5 * 1024 * 1024


class InvestigationStartForm(forms.Form):
    transaction_id = forms.CharField(max_length=64, label="Transaction id")


class TransactionImportForm(forms.Form):
    file = forms.FileField(label="CSV file", widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv"}))

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(f"The file is {upload.size / 1_048_576:.1f} MB; the limit is 5 MB.")
        return upload


class RuleEditForm(forms.Form):
    name = forms.CharField(max_length=120)
    description = forms.CharField(required=False, max_length=2000)
    conditions = forms.CharField(widget=forms.Textarea)

    def clean_conditions(self):
        try:
            value = json.loads(self.cleaned_data["conditions"])
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg} (line {exc.lineno}).")
        if not isinstance(value, list):
            raise forms.ValidationError("Give a list of conditions.")
        return value
