from __future__ import annotations

from django import forms

from casework.cases.models import Case


class CommentForm(forms.Form):
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Add a comment"}), max_length=10_000)


class CloseForm(forms.Form):
    outcome = forms.ChoiceField(choices=())
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=5_000)

    def __init__(self, *args, case: Case, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["outcome"].choices = case.type_info.outcomes
