"""What an access change names (casework.entities): the employee who made it, the one it was
made for, the manager who validates it, and the colleague an employee's claim names (whose
absence it is: found through this entity, an erasure of that colleague reaches the claim)."""

from __future__ import annotations

from casework.access.models import EmployeeClaim
from casework.cases.types import Entities, Found


def access_entities(case) -> list[Found]:
    mutation = getattr(case, "access_change", None)
    if mutation is None:
        return []
    found = [Found("employee", mutation.changed_by.employee_id, "changed_by"),
             Found("employee", mutation.changed_for.employee_id, "changed_for")]
    if mutation.manager_id:
        found.append(Found("employee", mutation.manager.employee_id, "manager"))
    colleagues = (EmployeeClaim.objects.filter(request__mutation=mutation, colleague__isnull=False)
                  .values_list("colleague__employee_id", flat=True).distinct())
    found += [Found("employee", employee_id, "claim.colleague") for employee_id in colleagues]
    return found


ENTITIES = Entities(extract=access_entities)
