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


def restriction_reason() -> forms.CharField:
    """Why a case is restricted or opened again: required, kept in its audit trail (the panel's
    label says so)."""
    return forms.CharField(max_length=2_000)


class RestrictForm(forms.Form):
    """Name the people a restricted case is shown to (the lead who restricts is always one)."""

    people = forms.ModelMultipleChoiceField(queryset=None, to_field_name="username", required=False,
                                            widget=forms.SelectMultiple(attrs={"size": 6}))
    reason = restriction_reason()

    def __init__(self, *args, **kwargs):
        from casework.people.roles import investigators

        super().__init__(*args, **kwargs)
        self.fields["people"].queryset = investigators().filter(is_active=True)


class UnrestrictForm(forms.Form):
    reason = restriction_reason()
