from __future__ import annotations

from datetime import UTC

from django import forms
from django.db.models import Case, IntegerField, Value, When
from django.utils import timezone

from casework.access.models import AccessLevel, Employee, EmployeeClaim, HRMutation, System


class DateInput(forms.DateInput):
    input_type = "date"


class ClaimForm(forms.Form):
    claim_type = forms.ChoiceField(choices=EmployeeClaim.ClaimType.choices, widget=forms.RadioSelect,
                                   label="Why did you make the change?")
    colleague = forms.ModelChoiceField(queryset=Employee.objects.none(), required=False,
                                       label="The colleague you covered for", empty_label="— choose a colleague —")
    period_start = forms.DateField(required=False, widget=DateInput, label="First day you covered")
    period_end = forms.DateField(required=False, widget=DateInput, label="Last day you covered")
    explanation = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), max_length=4000,
                                  label="Explain in your own words",
                                  help_text="What you changed and why; who asked you to, if anyone.")

    def __init__(self, *args, employee: Employee, **kwargs):
        super().__init__(*args, **kwargs)
        # Colleagues of the same department first; the rest of the organisation after them.
        colleagues = (Employee.objects.filter(status=Employee.Status.ACTIVE).exclude(pk=employee.pk)
                      .annotate(other_department=Case(When(department=employee.department, then=Value(0)),
                                                      default=Value(1), output_field=IntegerField()))
                      .order_by("other_department", "name"))
        self.fields["colleague"].queryset = colleagues
        self.fields["colleague"].label_from_instance = lambda e: f"{e.name} ({e.department or 'no department'})"

    def clean(self):
        data = super().clean()
        kind = data.get("claim_type")
        if kind and kind != EmployeeClaim.ClaimType.OTHER:
            if not data.get("colleague"):
                self.add_error("colleague", "Name the colleague you covered for.")
            if not data.get("period_start") or not data.get("period_end"):
                self.add_error("period_start", "Give the first and last day you covered.")
        if data.get("period_start") and data.get("period_end") and data["period_end"] < data["period_start"]:
            self.add_error("period_end", "The last day cannot be before the first.")
        return data


class VerdictForm(forms.Form):
    decision = forms.ChoiceField(choices=[("approve", "Approve the change"), ("deny", "Deny the change")],
                                 widget=forms.RadioSelect, label="Your decision")
    comment = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=4000, label="Comment",
                              help_text="The investigator reads this with your decision.")


class DecideForm(forms.Form):
    outcome = forms.ChoiceField(choices=[("accepted", "Accept the change"), ("rejected", "Reject the change"),
                                         ("manual", "Handled manually")], widget=forms.RadioSelect)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=5000)


class MutationForm(forms.Form):
    changed_by = forms.ModelChoiceField(queryset=Employee.objects.order_by("name"), label="Changed by")
    changed_for = forms.ModelChoiceField(queryset=Employee.objects.order_by("name"), label="Changed for")
    system = forms.ModelChoiceField(queryset=System.objects.all())
    access_level = forms.ModelChoiceField(queryset=AccessLevel.objects.all(), label="Access level the change needs")
    change_type = forms.ChoiceField(choices=HRMutation.ChangeType.choices, initial=HRMutation.ChangeType.UPDATE)
    field_changed = forms.CharField(max_length=80, initial="Access level")
    old_value = forms.CharField(max_length=200, required=False)
    new_value = forms.CharField(max_length=200, required=False)
    changed_at = forms.DateTimeField(widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
                                     label="Changed at (UTC)")
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False,
                             label="Reason recorded with the change")

    def clean_changed_at(self):
        value = self.cleaned_data["changed_at"]
        return value.replace(tzinfo=UTC) if timezone.is_naive(value) else value
