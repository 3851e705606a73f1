"""Export: every file import reads, plus audit_trail.csv and pending_actions.csv."""

from __future__ import annotations

import csv
from pathlib import Path

from django.db import transaction

from audit.models import AuditEntry
from audit.services import audit_record
from casework.access.data_io.files import COLUMNS, EXPORT_ONLY
from casework.access.models import (
    AccessLevel,
    DirectAuthorisation,
    Employee,
    HRMutation,
    InfoRequest,
    Role,
    RoleAuthorisation,
    SickLeave,
    System,
    Vacation,
)
from casework.access.special import CASE_TYPE, claim_masked
from casework.cases.masking import sees_special


def _write(path: Path, header: list[str], rows) -> int:
    count = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            writer.writerow(["" if v is None else v for v in row])
            count += 1
    return count


def access_data_export(directory, *, viewer=None) -> dict[str, int]:
    """Write every file import reads, plus audit_trail.csv and pending_actions.csv; audited.

    `viewer`: the person the export is for. Absences are special-category
    (casework/cases/masking.py): for someone outside the teams owning access changes,
    sickLeave.csv and vacation.csv keep their header and no rows (the file a row is in is
    itself its kind), and an employee's explanation of an absence is withheld in
    pending_actions.csv. Without a viewer (an operator's round trip on the server, who holds
    the database anyway) everything is written."""
    whole = viewer is None or sees_special(viewer, CASE_TYPE)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    cols = {name: req + opt for name, (req, opt) in COLUMNS.items()}
    counts = {}
    counts["access_levels.csv"] = _write(out / "access_levels.csv", cols["access_levels.csv"],
                                         ((lv.name, lv.rank) for lv in AccessLevel.objects.all()))
    counts["systems.csv"] = _write(out / "systems.csv", cols["systems.csv"],
                                   ((s.code, s.description, "true" if s.available else "false")
                                    for s in System.objects.all()))
    counts["roles.csv"] = _write(out / "roles.csv", cols["roles.csv"],
                                 ((r.role_id, r.name, r.department, r.description) for r in Role.objects.all()))
    counts["role_authorisations.csv"] = _write(
        out / "role_authorisations.csv", cols["role_authorisations.csv"],
        ((ra.role.role_id, ra.system.code, ra.access_level.name)
         for ra in RoleAuthorisation.objects.select_related("role", "system", "access_level")))
    counts["users.csv"] = _write(out / "users.csv", cols["users.csv"], (
        (e.employee_id, e.name, e.department, e.job_title, e.role.role_id if e.role else "",
         e.get_status_display(), e.email, e.manager.employee_id if e.manager else "", e.hire_date,
         e.termination_date, e.user.username if e.user else "")
        for e in Employee.objects.select_related("role", "manager", "user")))
    counts["authorisations.csv"] = _write(out / "authorisations.csv", cols["authorisations.csv"], (
        (a.authorisation_id, a.employee.employee_id, a.system.code, a.access_level.name, a.valid_from,
         a.granted_by, a.valid_to, a.get_status_display())
        for a in DirectAuthorisation.objects.select_related("employee", "system", "access_level")))
    for file, model in (("sickLeave.csv", SickLeave), ("vacation.csv", Vacation)):
        counts[file] = _write(out / file, cols[file], (
            (a.employee.employee_id, a.start_date, a.end_date, a.status)
            # the dates are encrypted at rest: ordered here, not by the database
            for a in sorted(model.objects.select_related("employee"),
                            key=lambda a: (a.employee.employee_id, a.start_date, a.pk))
            if whole))
    mutations = list(HRMutation.objects.select_related("changed_by", "changed_for", "system", "access_level",
                                                       "manager").order_by("changed_at", "id"))
    counts["hr_mutations.csv"] = _write(out / "hr_mutations.csv", cols["hr_mutations.csv"], (
        (m.mutation_id, m.changed_at.isoformat(), m.changed_by.employee_id, m.changed_for.employee_id,
         m.field_changed, m.system.code, m.access_level.name, m.change_type, m.old_value, m.new_value, m.reason,
         m.manager.employee_id if m.manager else "", m.status_label, _metadata(m.metadata))
        for m in mutations))
    by_case = {m.case_id: m.mutation_id for m in mutations}
    counts["audit_trail.csv"] = _write(out / "audit_trail.csv", EXPORT_ONLY["audit_trail.csv"], (
        (e.pk, by_case.get(e.case_id, ""), e.timestamp.isoformat(), e.data.get("from_label", e.data.get("from")),
         e.data.get("to_label", e.data.get("to")), e.actor, e.data.get("reason", ""))
        for e in AuditEntry.objects.filter(action="access.status_changed", case_id__in=list(by_case)).order_by("id")))
    counts["pending_actions.csv"] = _write(out / "pending_actions.csv", EXPORT_ONLY["pending_actions.csv"], (
        (r.pk, r.kind, r.recipient.employee_id, r.mutation.mutation_id, r.state(), r.sent_at.isoformat(),
         _response(r, viewer=viewer if not whole else None))
        for r in InfoRequest.objects.select_related("recipient", "mutation", "claim", "verdict").order_by("id")))
    with transaction.atomic():
        audit_record(actor=viewer or "system", action="access.data_exported",
                     data={"files": counts, "special_category": "whole" if whole else "withheld"})
    return counts


def _metadata(value: dict) -> str:
    import json

    return json.dumps(value, sort_keys=True) if value else ""


def _response(request: InfoRequest, *, viewer=None) -> str:
    """The answer in one line; with a `viewer`, an absence claim as they may see it."""
    claim = getattr(request, "claim", None)
    if claim is not None:
        shown = {"claim_type": claim.get_claim_type_display(), "explanation": claim.explanation}
        if viewer is not None:
            shown = claim_masked(viewer, claim, shown)
        return f"{shown['claim_type']}: {shown['explanation']}"
    verdict = getattr(request, "verdict", None)
    if verdict is not None:
        return f"{'approved' if verdict.approved else 'denied'}: {verdict.comment}"
    return ""
