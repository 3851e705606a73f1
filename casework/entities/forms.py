from __future__ import annotations

from django import forms

from casework.entities.models import CaseLink
from casework.entities.services import REASON_MAX


class LinkForm(forms.Form):
    kind = forms.ChoiceField(choices=CaseLink.Kind.choices)
    to = forms.CharField(max_length=20, label="Case reference")
    reason = forms.CharField(max_length=REASON_MAX, widget=forms.Textarea(attrs={"rows": 2}))


class MergeForm(forms.Form):
    into = forms.CharField(max_length=20, label="Merge into (reference)")
    reason = forms.CharField(max_length=REASON_MAX, widget=forms.Textarea(attrs={"rows": 2}))
