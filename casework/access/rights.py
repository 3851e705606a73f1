"""Did an employee hold a right on a day? Direct and role-based authorisations, their
validity dates and status, the employee's employment dates, and level ordering.

Deterministic and read-only: the check_authorization tool calls it, and its evidence rows
are what the investigator and the manager see.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date

from casework.access.models import AccessLevel, DirectAuthorisation, Employee, RoleAuthorisation, System


@dataclass
class EvidenceRow:
    source: str  # direct | role | employment
    reference: str  # authorisation id, role id, employee id
    system: str
    level: str
    valid_from: str = ""
    valid_to: str = ""
    status: str = ""
    covers: bool = False
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class RightsResult:
    employee_id: str
    system: str
    required_level: str
    on_date: str
    authorized: bool
    held_level: str = ""
    evidence: list[EvidenceRow] = field(default_factory=list)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["evidence"] = [row.as_dict() for row in self.evidence]
        return data


class RegistryUnavailable(Exception):
    """The system's authorisation registry cannot be queried right now."""


def _level_note(held: AccessLevel, required: AccessLevel) -> str:
    return "" if held.rank >= required.rank else f"{held.name} is below the required {required.name}"


def rights_evaluate(*, employee: Employee, system: System, level: AccessLevel, on_date: date) -> RightsResult:
    """Evidence rows for every authorisation the employee has, relevant ones first.

    A row covers the change when it is on the same system, at the required level or higher,
    valid on the day (valid_from <= day <= valid_to; a revoked grant with no end date never
    covers) and the employee was employed that day.
    """
    if not system.available:
        raise RegistryUnavailable(f"The authorisation registry of {system.code} is unavailable; "
                                  "rights on it cannot be checked right now.")
    result = RightsResult(employee_id=employee.employee_id, system=system.code, required_level=level.name,
                          on_date=on_date.isoformat(), authorized=False)
    employed = employee.employed_on(on_date)
    if not employed:
        result.evidence.append(EvidenceRow(
            source="employment", reference=employee.employee_id, system="", level="",
            valid_from=str(employee.hire_date or ""), valid_to=str(employee.termination_date or ""),
            status=employee.status, note=f"not employed on {on_date}: no right can cover the change",
        ))
    held: AccessLevel | None = None

    directs = (DirectAuthorisation.objects.filter(employee=employee)
               .select_related("system", "access_level").order_by("valid_from", "authorisation_id"))
    for auth in directs:
        row = EvidenceRow(source="direct", reference=auth.authorisation_id, system=auth.system.code,
                          level=auth.access_level.name, valid_from=auth.valid_from.isoformat(),
                          valid_to=auth.valid_to.isoformat() if auth.valid_to else "", status=auth.status)
        if auth.system_id != system.pk:
            row.note = "another system"
        elif auth.valid_from > on_date:
            row.note = f"not yet valid on {on_date}"
        elif auth.valid_to and auth.valid_to < on_date:
            row.note = f"ended on {auth.valid_to}"
        elif auth.status == DirectAuthorisation.Status.REVOKED and not auth.valid_to:
            row.note = "revoked (no end date recorded)"
        else:
            held = auth.access_level if held is None or auth.access_level.rank > held.rank else held
            row.note = _level_note(auth.access_level, level)
            row.covers = employed and not row.note
            if row.covers:
                row.note = "valid on the day at a sufficient level"
        result.evidence.append(row)

    if employee.role_id:
        role_auths = (RoleAuthorisation.objects.filter(role_id=employee.role_id)
                      .select_related("role", "system", "access_level").order_by("system__code"))
        for ra in role_auths:
            row = EvidenceRow(source="role", reference=ra.role.role_id, system=ra.system.code,
                              level=ra.access_level.name, status=f"role {ra.role.name}")
            if ra.system_id != system.pk:
                row.note = "another system"
            else:
                held = ra.access_level if held is None or ra.access_level.rank > held.rank else held
                row.note = _level_note(ra.access_level, level)
                row.covers = employed and not row.note
                if row.covers:
                    row.note = f"held through role {ra.role.name}"
            result.evidence.append(row)
    else:
        result.evidence.append(EvidenceRow(source="role", reference="", system="", level="",
                                           note="the employee has no role"))

    result.authorized = any(row.covers for row in result.evidence)
    result.held_level = held.name if held else ""
    # Rows about the system in question first, covering ones first among them.
    result.evidence.sort(key=lambda r: (r.source != "employment", not r.covers, r.system != system.code))
    return result
