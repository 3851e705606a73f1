"""`{% case_tasks_panel case %}`: the Tasks tab's section, on every case type's page."""

from __future__ import annotations

from django import template

from casework.cases.tasks import selectors
from casework.cases.tasks.forms import TaskAssignForm, TaskForm

register = template.Library()


@register.inclusion_tag("case_tasks/_panel.html", takes_context=True)
def case_tasks_panel(context, case):
    return {**selectors.task_panel(case), "request": context.get("request"), "form": TaskForm(),
            "assign_form": TaskAssignForm(), "csrf_token": context.get("csrf_token")}
