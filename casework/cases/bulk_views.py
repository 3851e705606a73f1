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
from casework.cases.bulk import ACTIONS, BULK_MAX, bulk_describe, bulk_validate, cases_bulk_apply
from casework.cases.filters import CaseFilter, assignee_resolve
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
        return assignee_resolve(self.cleaned_data.get("assignee"), user=self.user)

    def clean(self):
        """The bulk service's rules (bulk_validate), shown on the form: the references' problem
        for the whole form, the others on their fields."""
        data = super().clean()
        if "action" not in data:  # the action's own error says it
            return data
        try:
            bulk_validate(action=data["action"], references=self.refs, priority=data.get("priority") or "",
                          outcome=data.get("outcome") or "", reason=data.get("reason") or "")
        except ValidationError as exc:
            for name, problems in exc.message_dict.items():
                self.add_error(name if name in self.fields and name != "references" else None, problems)
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
    filterset = CaseFilter(query, queryset=selectors.case_list(request.user), request=request)
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

