"""Every write to a case's tasks; each one audited in its transaction.

A closed case's tasks no longer change (Conflict, which the API answers with 409).
"""

from __future__ import annotations

import datetime

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from audit.services import audit_record
from casework.cases.models import Case
from casework.cases.tasks.checklists import checklist_for
from casework.cases.tasks.models import TITLE_MAX_LENGTH, Task
from casework.errors import Conflict
from casework.people.roles import is_investigator


def _lock_open_case(case: Case) -> Case:
    """Re-read the case under a row lock (so two additions do not take one position) and
    refuse if it is closed."""
    case = Case.objects.select_for_update(of=("self",)).get(pk=case.pk)
    if case.is_closed:
        raise Conflict(f"{case.reference} is closed; its tasks can no longer change.", code="case_closed")
    return case


def _lock_task(task: Task) -> Task:
    """The task under a row lock, its case open (Conflict otherwise)."""
    _lock_open_case(task.case)
    return (Task.objects.select_for_update(of=("self",)).select_related("case", "assignee", "done_by")
            .get(pk=task.pk))


def _check_assignee(assignee: User | None) -> None:
    if assignee is not None and not is_investigator(assignee):
        raise ValidationError({"assignee": f"{assignee.get_username()} is not an investigator."})


def _username(user: User | None) -> str | None:
    return user.get_username() if user else None


@transaction.atomic
def task_create(*, actor: User, case: Case, title: str, assignee: User | None = None,
                due_on: datetime.date | None = None, template_key: str = "") -> Task:
    case = _lock_open_case(case)
    title = (title or "").strip()
    if not title:
        raise ValidationError({"title": "A task needs a title."})
    if len(title) > TITLE_MAX_LENGTH:
        raise ValidationError({"title": f"A task title is at most {TITLE_MAX_LENGTH} characters."})
    _check_assignee(assignee)
    last = Task.objects.filter(case=case).aggregate(last=Max("position"))["last"] or 0
    task = Task(case=case, title=title, assignee=assignee, due_on=due_on, created_by=actor,
                position=last + 1, template_key=template_key)
    task.full_clean(validate_constraints=False)
    task.save()
    audit_record(actor=actor, action="task.created", case=case, obj=task,
                 data={"title": title, "assignee": _username(assignee), "due_on": due_on,
                       "position": task.position, **({"template": template_key} if template_key else {})})
    return task


@transaction.atomic
def task_add_from_template(*, actor: User, case: Case) -> list[Task]:
    """Add the lines of the case type's checklist this case does not have yet (none twice)."""
    case = _lock_open_case(case)
    have = set(Task.objects.filter(case=case).exclude(template_key="").values_list("template_key", flat=True))
    return [task_create(actor=actor, case=case, title=title, template_key=key)
            for key, title in checklist_for(case.case_type) if key not in have]


@transaction.atomic
def task_assign(*, actor: User, task: Task, assignee: User | None) -> Task:
    task = _lock_task(task)
    _check_assignee(assignee)
    if assignee == task.assignee:
        return task
    previous = task.assignee
    task.assignee = assignee
    task.save(update_fields=["assignee"])
    audit_record(actor=actor, action="task.assigned", case=task.case, obj=task,
                 data={"title": task.title, "from": _username(previous), "to": _username(assignee)})
    return task


@transaction.atomic
def task_complete(*, actor: User, task: Task) -> Task:
    """Mark the task done by the actor. A second "done" (a double click, two people at once)
    is a Conflict naming who did it first."""
    task = _lock_task(task)
    if task.done:
        raise Conflict(f"\u201c{task.title}\u201d was already done by {_username(task.done_by)} "
                       f"at {task.done_at:%Y-%m-%d %H:%M} UTC.", code="task_done")
    task.done, task.done_by, task.done_at = True, actor, timezone.now()
    task.save(update_fields=["done", "done_by", "done_at"])
    audit_record(actor=actor, action="task.done", case=task.case, obj=task, data={"title": task.title})
    return task


@transaction.atomic
def task_reopen(*, actor: User, task: Task) -> Task:
    task = _lock_task(task)
    if not task.done:
        raise Conflict(f"\u201c{task.title}\u201d is not done; there is nothing to reopen.", code="task_open")
    previous_by, previous_at = task.done_by, task.done_at
    task.done, task.done_by, task.done_at = False, None, None
    task.save(update_fields=["done", "done_by", "done_at"])
    audit_record(actor=actor, action="task.reopened", case=task.case, obj=task,
                 data={"title": task.title, "was_done_by": _username(previous_by), "was_done_at": previous_at})
    return task
