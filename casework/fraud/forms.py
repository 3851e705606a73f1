from __future__ import annotations

from django import forms

MAX_UPLOAD_BYTES = 5 * 1024 * 1024


class AlertImportForm(forms.Form):
    file = forms.FileField(label="CSV file", widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv"}))
    skip_invalid = forms.BooleanField(
        required=False, label="Skip invalid rows",
        help_text="Import the valid rows and list the invalid ones. Otherwise one bad row imports nothing.",
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                f"The file is {upload.size / 1_048_576:.1f} MB; the limit is {MAX_UPLOAD_BYTES // 1_048_576} MB. "
                "Split it, or use manage.py import_alerts.")
        return upload


class PatternSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=200)
