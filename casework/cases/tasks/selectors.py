"""Reads of a case's tasks, with the people they name fetched up front."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from casework.cases.models import Case
from casework.cases.tasks.checklists import checklist_for
from casework.cases.tasks.models import Task


def task_list(case: Case) -> QuerySet[Task]:
    return Task.objects.filter(case=case).select_related("assignee", "done_by", "created_by").order_by("position")


def task_get(case: Case, pk: int) -> Task:
    """One task of this case (404 for another case's task: the case check already ran)."""
    return get_object_or_404(Task.objects.select_related("case", "assignee", "done_by"), case=case, pk=pk)


def task_template_missing(case: Case, tasks) -> list[tuple[str, str]]:
    """The checklist lines the case does not have yet (what "Add tasks from template" adds)."""
    have = {t.template_key for t in tasks if t.template_key}
    return [(key, title) for key, title in checklist_for(case.case_type) if key not in have]


def task_panel(case: Case) -> dict:
    """What the Tasks tab shows: the tasks, how many are done, the checklist lines not added yet."""
    tasks = list(task_list(case))
    return {"case": case, "tasks": tasks, "done_count": sum(t.done for t in tasks),
            "template_missing": task_template_missing(case, tasks), "editable": not case.is_closed}
