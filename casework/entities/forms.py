from __future__ import annotations

from django import forms

from casework.entities.models import CaseLink
from casework.entities.services import REASON_MAX


class LinkForm(forms.Form):
    """On every case page beside the decision's and the merge's forms: ids and labels of its own."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "link_%s")
        super().__init__(*args, **kwargs)

    kind = forms.ChoiceField(choices=CaseLink.Kind.choices)
    to = forms.CharField(max_length=20, label="Case reference")
    reason = forms.CharField(max_length=REASON_MAX, widget=forms.Textarea(attrs={"rows": 2}))


class MergeForm(forms.Form):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "merge_%s")
        super().__init__(*args, **kwargs)

    into = forms.CharField(max_length=20, label="Merge into (reference)")
    reason = forms.CharField(max_length=REASON_MAX, widget=forms.Textarea(attrs={"rows": 2}))
