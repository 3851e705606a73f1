"""Demo tasks: the oldest open case of each type gets its checklist, one line done and one
assigned, so that a new user sees the Tasks tab at work."""

from __future__ import annotations

from casework.cases.models import Case
from casework.cases.tasks import services
from casework.cases.tasks.models import Task


def demo_load_tasks(*, users: dict) -> None:
    alice, ivan = users["alice"], users["ivan"]
    for case_type in Case.objects.values_list("case_type", flat=True).distinct().order_by():
        case = (Case.objects.filter(case_type=case_type).exclude(status=Case.Status.CLOSED)
                .order_by("created_at", "id").first())
        # Once per type: a later run of the demo (which may add cases) adds no more.
        if case is None or Task.objects.filter(case__case_type=case_type).exists():
            continue
        tasks = services.task_add_from_template(actor=alice, case=case)
        if tasks:
            services.task_complete(actor=alice, task=tasks[0])
        if len(tasks) > 1:
            services.task_assign(actor=alice, task=tasks[1], assignee=ivan)
