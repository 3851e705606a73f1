from __future__ import annotations

from django import forms

from casework.support.models import Customer
from casework.support.tickets import MESSAGE_MAX_LENGTH


class MessageForm(forms.Form):
    customer_id = forms.ModelChoiceField(queryset=Customer.objects.all(), to_field_name="customer_id",
                                         label="Customer")
    channel = forms.ChoiceField(choices=[("email", "Email"), ("chat", "Chat"), ("phone", "Phone"), ("api", "API")],
                                initial="email")
    message = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), max_length=MESSAGE_MAX_LENGTH)


class ReplyForm(forms.Form):
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 8}), max_length=MESSAGE_MAX_LENGTH)


class ReasonForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=5000)


class EscalateToGroupForm(forms.Form):
    group = forms.ChoiceField(choices=[("billing", "Billing"), ("technical", "Technical"), ("general", "General"),
                                       ("security", "Security")])
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=5000)
