"""What an access change names (casework.entities): the employee who made it, the one it was
made for, and the manager who validates it."""

from __future__ import annotations

from casework.cases.types import Entities, Found


def access_entities(case) -> list[Found]:
    mutation = getattr(case, "access_change", None)
    if mutation is None:
        return []
    found = [Found("employee", mutation.changed_by.employee_id, "changed_by"),
             Found("employee", mutation.changed_for.employee_id, "changed_for")]
    if mutation.manager_id:
        found.append(Found("employee", mutation.manager.employee_id, "manager"))
    return found


ENTITIES = Entities(extract=access_entities)
