from __future__ import annotations

from django import forms
from django.contrib.auth.models import User

from casework.cases.tasks.models import TITLE_MAX_LENGTH
from casework.people.roles import ADMIN, INVESTIGATOR


def investigators():
    return User.objects.filter(groups__name__in=[INVESTIGATOR, ADMIN]).distinct().order_by("username")


class TaskForm(forms.Form):
    def __init__(self, *args, **kwargs):
        # Ids of their own: the case page holds other forms with a "title" or an "assignee".
        kwargs.setdefault("auto_id", "task_%s")
        super().__init__(*args, **kwargs)

    title = forms.CharField(max_length=TITLE_MAX_LENGTH,
                            widget=forms.TextInput(attrs={"placeholder": "Call the customer"}))
    assignee = forms.ModelChoiceField(queryset=investigators(), required=False, empty_label="Nobody yet",
                                      to_field_name="username")
    due_on = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), label="Due")


class TaskAssignForm(forms.Form):
    assignee = forms.ModelChoiceField(queryset=investigators(), required=False, empty_label="Nobody",
                                      to_field_name="username")
