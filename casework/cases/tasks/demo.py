"""Demo tasks: the oldest open case of each type gets its checklist, one line done and one
assigned, so that a new user sees the Tasks tab at work."""

from __future__ import annotations

from casework.cases.models import Case
from casework.cases.tasks import services
from casework.cases.tasks.models import Task
from casework.cases.visibility import case_visible, sees_every_case
from casework.people.roles import is_investigator


def _workers(users: dict, case: Case) -> list:
    """The demo's people of the team that works this case (admins aside), in the demo's order."""
    return [u for u in users.values() if is_investigator(u) and not sees_every_case(u) and case_visible(u, case)]


def demo_load_tasks(*, users: dict) -> None:
    for case_type in Case.objects.values_list("case_type", flat=True).distinct().order_by():
        case = (Case.objects.filter(case_type=case_type).exclude(status=Case.Status.CLOSED)
                .order_by("created_at", "id").first())
        # Once per type: a later run of the demo (which may add cases) adds no more.
        if case is None or Task.objects.filter(case__case_type=case_type).exists():
            continue
        workers = _workers(users, case)
        if not workers:
            continue
        # The team's first person sets it up and hands a line to the next (or keeps it).
        first, second = workers[0], workers[1 % len(workers)]
        tasks = services.task_add_from_template(actor=first, case=case)
        if tasks:
            services.task_complete(actor=first, task=tasks[0])
        if len(tasks) > 1:
            services.task_assign(actor=first, task=tasks[1], assignee=second)
