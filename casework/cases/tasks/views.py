"""The Tasks tab's actions. An htmx post gets the tab's section back; a plain one a redirect
to the case page (with the outcome as a message)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from casework.cases.selectors import case_get_for_user
from casework.cases.tasks import selectors, services
from casework.cases.tasks.forms import TaskAssignForm, TaskForm
from casework.errors import DomainError, error_text
from casework.people.roles import investigator_required


def _answer(request, case, *, form=None, error: str = ""):
    if request.htmx:
        # 200 with the message in the section: htmx swaps no 4xx response.
        context = {**selectors.task_panel(case), "form": form or TaskForm(), "assign_form": TaskAssignForm(),
                   "error": error}
        return render(request, "case_tasks/_panel.html", context)
    if error or (form is not None and form.errors):
        messages.error(request, error or error_text(form.errors))
    return redirect("cases:detail", reference=case.reference)


@require_GET
@investigator_required
def panel(request, reference: str):
    case = case_get_for_user(request.user, reference)
    return render(request, "case_tasks/_panel.html",
                  {**selectors.task_panel(case), "form": TaskForm(), "assign_form": TaskAssignForm()})


@require_POST
@investigator_required
def add(request, reference: str):
    case = case_get_for_user(request.user, reference)
    form = TaskForm(request.POST)
    if not form.is_valid():
        return _answer(request, case, form=form)
    try:
        services.task_create(actor=request.user, case=case, **form.cleaned_data)
    except DomainError as exc:
        return _answer(request, case, form=form, error=exc.message)
    except ValidationError as exc:
        return _answer(request, case, form=form, error=error_text(exc))
    return _answer(request, case)


@require_POST
@investigator_required
def from_template(request, reference: str):
    case = case_get_for_user(request.user, reference)
    try:
        services.task_add_from_template(actor=request.user, case=case)
    except DomainError as exc:
        return _answer(request, case, error=exc.message)
    return _answer(request, case)


def _act(request, reference: str, pk: int, action):
    case = case_get_for_user(request.user, reference)
    task = selectors.task_get(case, pk)
    try:
        action(task)
    except DomainError as exc:
        return _answer(request, case, error=exc.message)
    except ValidationError as exc:
        return _answer(request, case, error=error_text(exc))
    return _answer(request, case)


@require_POST
@investigator_required
def done(request, reference: str, pk: int):
    return _act(request, reference, pk, lambda task: services.task_complete(actor=request.user, task=task))


@require_POST
@investigator_required
def reopen(request, reference: str, pk: int):
    return _act(request, reference, pk, lambda task: services.task_reopen(actor=request.user, task=task))


@require_POST
@investigator_required
def assign(request, reference: str, pk: int):
    form = TaskAssignForm(request.POST)
    if not form.is_valid():
        case = case_get_for_user(request.user, reference)
        selectors.task_get(case, pk)
        return _answer(request, case, error=error_text(ValidationError(form.errors.as_data())))
    return _act(request, reference, pk,
                lambda task: services.task_assign(actor=request.user, task=task, assignee=form.cleaned_data["assignee"]))
