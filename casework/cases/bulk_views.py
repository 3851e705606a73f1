"""Bulk actions from the queue: a confirmation naming the count, then one service call per case."""

from __future__ import annotations

from urllib.parse import urlsplit

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import QueryDict
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from casework.cases import selectors
from casework.cases.bulk import ACTIONS, BULK_MAX, bulk_describe, bulk_outcome_choices, cases_bulk_apply
from casework.cases.filters import CaseFilter, _investigators
from casework.cases.models import Case
from casework.errors import error_lines
from casework.people.roles import investigator_required


class BulkForm(forms.Form):
    references = forms.CharField(required=False)  # filled from the checked rows (getlist)
    action = forms.ChoiceField(choices=list(ACTIONS.items()))
    assignee = forms.CharField(required=False, help_text="`me` or an investigator's username.")
    priority = forms.ChoiceField(choices=[("", "—"), *Case.Priority.choices], required=False)
    outcome = forms.CharField(required=False)
    reason = forms.CharField(required=False, max_length=5_000)

    def __init__(self, data, *, user, references):
        super().__init__(data)
        self.user = user
        self.refs = references

    def clean_assignee(self):
        value = (self.cleaned_data.get("assignee") or "").strip()
        if value in ("", "me"):
            return self.user
        if value == "none":
            return None
        user = _investigators().filter(username=value).first()
        if user is None:
            raise ValidationError(f"{value} is not an investigator.")
        return user

    def clean(self):
        data = super().clean()
        if not self.refs:
            self.add_error(None, "Select at least one case.")
        elif len(self.refs) > BULK_MAX:
            self.add_error(None, f"At most {BULK_MAX} cases at a time.")
        action = data.get("action")
        if action == "priority" and not data.get("priority"):
            self.add_error("priority", "Choose a priority.")
        if action == "close":
            outcomes = {key for _, group in bulk_outcome_choices() for key, _ in group}
            if data.get("outcome") not in outcomes:
                self.add_error("outcome", "Choose an outcome.")
            if not (data.get("reason") or "").strip():
                self.add_error("reason", "Give a reason for the decision.")
        return data


def _next(request) -> str:
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return "/cases/"


def _matching(request) -> list[str]:
    """Every case the queue's filters (in `next`) match, up to BULK_MAX, in the queue's order."""
    query = QueryDict(urlsplit(_next(request)).query)
    filterset = CaseFilter(query, queryset=selectors.case_list(), request=request)
    if not filterset.is_valid():
        return []
    return list(filterset.qs.values_list("reference", flat=True)[:BULK_MAX])


@require_POST
@investigator_required
def bulk(request):
    """Without `confirm`: the confirmation (a fragment for htmx, else a page). With it: apply."""
    references = [r for r in request.POST.getlist("references") if r]
    if request.POST.get("all_matching") == "1":
        references = _matching(request) or references
    form = BulkForm(request.POST, user=request.user, references=references)
    if not form.is_valid():
        errors = error_lines(form.errors)
        context = {"errors": errors, "next": _next(request)}
        template = "cases/_bulk_confirm.html" if request.htmx else "cases/bulk_confirm.html"
        # htmx swaps no 4xx response: the fragment comes with 200 and the message shows.
        return render(request, template, context, status=200 if request.htmx else 400)
    data = form.cleaned_data
    if not request.POST.get("confirm"):
        question = bulk_describe(action=data["action"], count=len(references), assignee=data["assignee"],
                                 priority=data["priority"], outcome=data["outcome"])
        context = {"question": question, "references": references, "data": data, "next": _next(request),
                   "assignee_name": data["assignee"].get_username() if data["assignee"] else "none",
                   "verb": ACTIONS[data["action"]]}
        template = "cases/_bulk_confirm.html" if request.htmx else "cases/bulk_confirm.html"
        return render(request, template, context)
    result = cases_bulk_apply(actor=request.user, references=references, action=data["action"],
                              assignee=data["assignee"] if data["action"] == "assign" else None,
                              priority=data["priority"], outcome=data["outcome"], reason=data["reason"])
    _report(request, result)
    return redirect(_next(request))


def _report(request, result) -> None:
    done = len(result.done)
    verb = {"assign": "Assigned", "priority": "Changed the priority of", "close": "Closed"}[result.action]
    if done:
        messages.success(request, f"{verb} {done} case{'' if done == 1 else 's'}.")
    if result.skipped:
        lines = "; ".join(f"{ref}: {why}" for ref, why in result.skipped)
        n = len(result.skipped)
        messages.warning(request, f"Skipped {n} case{'' if n == 1 else 's'} — {lines}.")

