"""Reading and writing the seed's CSV files (docs/access_data.md describes every column).

Import is all or nothing: every file is read and every row checked inside one transaction;
one bad row (a missing field, a date that is not a date, a reference to nobody) and the
whole import is rolled back, with each problem named by file, row (the line number in the
file) and field. Rows are matched on their ids, so importing the same files twice changes
nothing the second time. Mutations with status Pending are investigated once the import
has committed; other statuses are history, stored as they are.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.dateparse import parse_datetime

from audit.models import AuditEntry
from audit.services import audit_record
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
from casework.access.states import AccessStatus

# file name -> (required columns, optional columns), in import order.
COLUMNS: dict[str, tuple[list[str], list[str]]] = {
    "access_levels.csv": (["Name", "Rank"], []),
    "systems.csv": (["System"], ["Description", "Available"]),
    "roles.csv": (["RoleID", "RoleName"], ["Department", "Description"]),
    "role_authorisations.csv": (["RoleID", "System", "AccessLevel"], []),
    "users.csv": (["UserID", "Name"], ["Department", "JobTitle", "RoleID", "Status", "Email", "Manager", "HireDate",
                                        "TerminationDate", "Username"]),
    "authorisations.csv": (["AuthorisationID", "UserID", "System", "AccessLevel", "GrantedOn"],
                           ["GrantedBy", "ExpiresOn", "Status"]),
    "sickLeave.csv": (["UserID", "StartDate", "EndDate"], ["Status"]),
    "vacation.csv": (["UserID", "StartDate", "EndDate"], ["Status"]),
    "hr_mutations.csv": (["MutationID", "Timestamp", "ChangedBy", "ChangedFor", "FieldChanged", "System",
                          "AccessLevel"],
                         ["ChangeType", "OldValue", "NewValue", "Reason", "ManagerID", "change_investigation",
                          "Metadata"]),
}
# Written by export only: the audit trail is append-only and written as things happen, and
# requests to people are made by the investigation, so importing them would forge history.
EXPORT_ONLY = {
    "audit_trail.csv": ["AuditID", "MutationID", "Timestamp", "OldStatus", "NewStatus", "Agent", "Comment"],
    "pending_actions.csv": ["action_id", "type", "recipient_id", "mutation_id", "status", "created_at", "response"],
}


@dataclass
class Problem:
    file: str
    row: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file} row {self.row}" if self.row else self.file
        return f"{where}, field {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class ImportFailed(Exception):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass
class ImportResult:
    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    skipped_files: list[str] = field(default_factory=list)
    investigated: int = 0


class _Row:
    """One CSV row with its line number; field readers record problems instead of raising."""

    def __init__(self, importer: Importer, file: str, line: int, data: dict):
        self.importer, self.file, self.line, self.data = importer, file, line, data
        self.ok = True

    def problem(self, column: str, message: str) -> None:
        self.ok = False
        self.importer.problems.append(Problem(self.file, self.line, column, message))

    def text(self, column: str, *, required: bool = False, max_length: int | None = None) -> str:
        value = (self.data.get(column) or "").strip()
        if required and not value:
            self.problem(column, "is required")
        if max_length and len(value) > max_length:
            self.problem(column, f"is longer than {max_length} characters")
        return value

    def day(self, column: str, *, required: bool = False) -> date | None:
        value = self.text(column, required=required)
        if not value:
            return None
        try:
            return date.fromisoformat(value)
        except ValueError:
            self.problem(column, f"{value!r} is not a date (YYYY-MM-DD)")
            return None

    def moment(self, column: str) -> datetime | None:
        value = self.text(column, required=True)
        if not value:
            return None
        parsed = None
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
        if parsed is None:
            self.problem(column, f"{value!r} is not an ISO 8601 date and time")
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)

    def ref(self, column: str, lookup: Callable[[str], object | None], what: str, *, required: bool = True):
        value = self.text(column, required=required)
        if not value:
            return None
        obj = lookup(value)
        if obj is None:
            self.problem(column, f"no {what} {value!r}")
        return obj

    def choice(self, column: str, choices: dict[str, str], default: str) -> str:
        value = self.text(column)
        if not value:
            return default
        key = value.strip().lower()
        if key not in choices:
            self.problem(column, f"{value!r} is not one of {', '.join(sorted(set(choices)))}")
            return default
        return choices[key]


class Importer:
    def __init__(self, directory: Path, *, investigate: bool = True, actor="system"):
        self.directory = Path(directory)
        self.investigate = investigate
        self.actor = actor
        self.problems: list[Problem] = []
        self.result = ImportResult()

    # -- reading -------------------------------------------------------------------------------

    def rows(self, name: str) -> Iterator[_Row]:
        path = self.directory / name
        required, optional = COLUMNS[name]
        text = path.read_text(encoding="utf-8-sig")
        # The seed's files may start with '#' comment lines; they are not data.
        lines = text.splitlines(keepends=True)
        skipped = 0
        while skipped < len(lines) and lines[skipped].lstrip().startswith("#"):
            skipped += 1
        reader = csv.DictReader(io.StringIO("".join(lines[skipped:])))
        header = [h.strip() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        missing = [c for c in required if c not in header]
        if missing:
            self.problems.append(Problem(name, skipped + 1, ", ".join(missing), "column missing from the header"))
            return
        unknown = [c for c in header if c and c not in required + optional]
        if unknown:
            self.problems.append(Problem(name, skipped + 1, ", ".join(unknown),
                                         f"unknown column (expected {', '.join(required + optional)})"))
            return
        for data in reader:
            if not any((v or "").strip() for v in data.values() if isinstance(v, str)):
                continue
            if None in data:
                self.problems.append(Problem(name, skipped + reader.line_num, "", "has more values than the header"))
                continue
            yield _Row(self, name, skipped + reader.line_num, data)

    def count(self, bucket: str, name: str) -> None:
        counts = getattr(self.result, bucket)
        counts[name] = counts.get(name, 0) + 1

    def save(self, row: _Row, obj, created: bool, changed: bool = True, columns: dict | None = None) -> None:
        """Validate the model (naming the CSV column of any field it refuses) and save it."""
        try:
            obj.full_clean()
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                row.problem((columns or {}).get(name, name), "; ".join(messages))
            return
        if created or changed:
            obj.save()
        self.count("created" if created else "updated" if changed else "unchanged", row.file)

    # -- the files -----------------------------------------------------------------------------

    def run(self) -> ImportResult:
        if not self.directory.is_dir():
            raise ImportFailed([Problem(str(self.directory), 0, "", "is not a directory")])
        present = [n for n in COLUMNS if (self.directory / n).exists()]
        if not present:
            raise ImportFailed([Problem(str(self.directory), 0, "", f"holds none of {', '.join(COLUMNS)}")])
        self.result.skipped_files = [n for n in EXPORT_ONLY if (self.directory / n).exists()]
        with transaction.atomic():
            for name in present:
                getattr(self, "_" + name.removesuffix(".csv").lower())(name)
            if self.problems:
                raise ImportFailed(self.problems)
            audit_record(actor=self.actor, action="access.data_imported",
                         data={"directory": str(self.directory), "created": self.result.created,
                               "updated": self.result.updated})
        return self.result

    def _access_levels(self, name):
        for row in self.rows(name):
            level_name = row.text("Name", required=True, max_length=40)
            rank_text = row.text("Rank", required=True)
            if rank_text and not rank_text.isdigit():
                row.problem("Rank", f"{rank_text!r} is not a whole number")
            if not row.ok:
                continue
            obj = AccessLevel.objects.filter(name__iexact=level_name).first()
            created = obj is None
            obj = obj or AccessLevel(name=level_name)
            changed = obj.rank != int(rank_text)
            obj.rank = int(rank_text)
            self.save(row, obj, created, changed, {"name": "Name", "rank": "Rank"})

    def _systems(self, name):
        for row in self.rows(name):
            code = row.text("System", required=True, max_length=60)
            available = row.choice("Available", {"true": "1", "yes": "1", "1": "1", "false": "", "no": "",
                                                 "0": ""}, "1") == "1"
            description = row.text("Description", max_length=200)
            if not row.ok:
                continue
            obj = System.objects.filter(code__iexact=code).first()
            created = obj is None
            obj = obj or System(code=code)
            changed = (obj.description, obj.available) != (description, available)
            obj.description, obj.available = description, available
            self.save(row, obj, created, changed, {"code": "System", "description": "Description"})

    def _roles(self, name):
        for row in self.rows(name):
            role_id = row.text("RoleID", required=True, max_length=20)
            values = {"name": row.text("RoleName", required=True, max_length=100),
                      "department": row.text("Department", max_length=80),
                      "description": row.text("Description", max_length=300)}
            if row.ok:
                self._upsert(row, Role, {"role_id": role_id}, values,
                             {"role_id": "RoleID", "name": "RoleName", "department": "Department",
                              "description": "Description"})

    def _role_authorisations(self, name):
        for row in self.rows(name):
            role = row.ref("RoleID", lambda v: Role.objects.filter(role_id=v).first(), "role")
            system = row.ref("System", _system, "system")
            level = row.ref("AccessLevel", _level, "access level")
            if row.ok:
                self._upsert(row, RoleAuthorisation, {"role": role, "system": system}, {"access_level": level},
                             {"role": "RoleID", "system": "System", "access_level": "AccessLevel"})

    def _users(self, name):
        rows = list(self.rows(name))
        managers: list[tuple[_Row, Employee]] = []
        statuses = {"active": "active", "terminated": "terminated", "removed": "terminated"}
        for row in rows:
            values = {
                "name": row.text("Name", required=True, max_length=120),
                "department": row.text("Department", max_length=80),
                "job_title": row.text("JobTitle", max_length=100),
                "email": row.text("Email"),
                "status": row.choice("Status", statuses, "active"),
                "hire_date": row.day("HireDate"),
                "termination_date": row.day("TerminationDate"),
                "role": row.ref("RoleID", lambda v: Role.objects.filter(role_id=v).first(), "role", required=False),
                "user": row.ref("Username", lambda v: User.objects.filter(username=v).first(), "login",
                                required=False),
            }
            employee_id = row.text("UserID", required=True, max_length=20)
            if row.ok:
                obj = self._upsert(row, Employee, {"employee_id": employee_id}, values, _EMPLOYEE_COLUMNS)
                if obj is not None:
                    managers.append((row, obj))
        # Managers second, so a manager may appear after their reports in the file.
        for row, obj in managers:
            manager_id = row.text("Manager")
            manager = Employee.objects.filter(employee_id=manager_id).first() if manager_id else None
            if manager_id and manager is None:
                row.problem("Manager", f"no employee {manager_id!r}")
            elif manager and manager.pk == obj.pk:
                row.problem("Manager", "an employee cannot be their own manager")
            elif obj.manager_id != (manager.pk if manager else None):
                Employee.objects.filter(pk=obj.pk).update(manager=manager)

    def _authorisations(self, name):
        statuses = {"active": "active", "revoked": "revoked"}
        for row in self.rows(name):
            auth_id = row.text("AuthorisationID", required=True, max_length=20)
            values = {"employee": row.ref("UserID", _employee, "employee"),
                      "system": row.ref("System", _system, "system"),
                      "access_level": row.ref("AccessLevel", _level, "access level"),
                      "granted_by": row.text("GrantedBy", max_length=120),
                      "valid_from": row.day("GrantedOn", required=True), "valid_to": row.day("ExpiresOn"),
                      "status": row.choice("Status", statuses, "active")}
            if values["valid_from"] and values["valid_to"] and values["valid_to"] < values["valid_from"]:
                row.problem("ExpiresOn", "is before GrantedOn")
            if row.ok:
                self._upsert(row, DirectAuthorisation, {"authorisation_id": auth_id}, values,
                             {"authorisation_id": "AuthorisationID", "employee": "UserID", "system": "System",
                              "access_level": "AccessLevel", "granted_by": "GrantedBy", "valid_from": "GrantedOn",
                              "valid_to": "ExpiresOn", "status": "Status"})

    def _absences(self, name, model):
        statuses = {"approved": "approved", "pending": "pending", "rejected": "rejected"}
        for row in self.rows(name):
            employee = row.ref("UserID", _employee, "employee")
            start, end = row.day("StartDate", required=True), row.day("EndDate", required=True)
            status = row.choice("Status", statuses, "approved")
            if start and end and end < start:
                row.problem("EndDate", "is before StartDate")
            if row.ok:
                self._upsert(row, model, {"employee": employee, "start_date": start, "end_date": end},
                             {"status": status}, {"employee": "UserID", "start_date": "StartDate",
                                                  "end_date": "EndDate", "status": "Status", "__all__": ""})

    def _sickleave(self, name):
        self._absences(name, SickLeave)

    def _vacation(self, name):
        self._absences(name, Vacation)

    def _hr_mutations(self, name):
        from casework.access.services import mutation_submit

        statuses = {s.value: s.value for s in AccessStatus} | {s.label.lower(): s.value for s in AccessStatus}
        types = {t.value: t.value for t in HRMutation.ChangeType}
        for row in self.rows(name):
            mutation_id = row.text("MutationID", required=True, max_length=40)
            values = {
                "changed_at": row.moment("Timestamp"),
                "changed_by": row.ref("ChangedBy", _employee, "employee"),
                "changed_for": row.ref("ChangedFor", _employee, "employee"),
                "change_type": row.choice("ChangeType", types, "update"),
                "field_changed": row.text("FieldChanged", required=True, max_length=80),
                "old_value": row.text("OldValue", max_length=200),
                "new_value": row.text("NewValue", max_length=200),
                "system": row.ref("System", _system, "system"),
                "access_level": row.ref("AccessLevel", _level, "access level"),
                "reason": row.text("Reason"),
                "manager": row.ref("ManagerID", _employee, "employee", required=False),
                "initial_status": row.choice("change_investigation", statuses, "pending"),
                "metadata": _json_object(row, "Metadata"),
            }
            if not row.ok:
                continue
            if HRMutation.objects.filter(mutation_id=mutation_id).exists():
                self.count("unchanged", name)
                continue
            try:
                with transaction.atomic():
                    mutation_submit(actor=self.actor, mutation_id=mutation_id, investigate=self.investigate,
                                    **values)
            except ValidationError as exc:
                for column, messages in getattr(exc, "message_dict", {"": exc.messages}).items():
                    row.problem(_MUTATION_COLUMNS.get(column, column), "; ".join(messages))
                continue
            self.count("created", name)
            if values["initial_status"] == AccessStatus.PENDING and self.investigate:
                self.result.investigated += 1

    def _upsert(self, row: _Row, model, keys: dict, values: dict, columns: dict):
        obj = model.objects.filter(**keys).first()
        created = obj is None
        if created:
            obj = model(**keys)
        changed = created or any(getattr(obj, k) != v for k, v in values.items())
        for k, v in values.items():
            setattr(obj, k, v)
        self.save(row, obj, created, changed, columns)
        return obj if row.ok else None


_MUTATION_COLUMNS = {"changed_at": "Timestamp", "field_changed": "FieldChanged", "status": "change_investigation",
                     "old_value": "OldValue", "new_value": "NewValue", "reason": "Reason", "metadata": "Metadata"}
_EMPLOYEE_COLUMNS = {"employee_id": "UserID", "name": "Name", "department": "Department", "job_title": "JobTitle",
                     "email": "Email", "status": "Status", "hire_date": "HireDate",
                     "termination_date": "TerminationDate", "role": "RoleID", "user": "Username"}


def _json_object(row: _Row, column: str) -> dict:
    import json

    value = row.text(column)
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        row.problem(column, "is not a JSON object")
        return {}
    return parsed


def _employee(value: str):
    return Employee.objects.filter(employee_id=value).first()


def _system(value: str):
    return System.objects.filter(code__iexact=value).first()


def _level(value: str):
    return AccessLevel.objects.filter(name__iexact=value).first()


def access_data_import(directory, *, investigate: bool = True, actor="system") -> ImportResult:
    return Importer(Path(directory), investigate=investigate, actor=actor).run()


# --- export -----------------------------------------------------------------------------------

def _write(path: Path, header: list[str], rows) -> int:
    count = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            writer.writerow(["" if v is None else v for v in row])
            count += 1
    return count


def access_data_export(directory) -> dict[str, int]:
    """Write every file import reads, plus audit_trail.csv and pending_actions.csv."""
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
            for a in model.objects.select_related("employee").order_by("employee__employee_id", "start_date")))
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
         _response(r))
        for r in InfoRequest.objects.select_related("recipient", "mutation", "claim", "verdict").order_by("id")))
    return counts


def _metadata(value: dict) -> str:
    import json

    return json.dumps(value, sort_keys=True) if value else ""


def _response(request: InfoRequest) -> str:
    claim = getattr(request, "claim", None)
    if claim is not None:
        return f"{claim.get_claim_type_display()}: {claim.explanation}"
    verdict = getattr(request, "verdict", None)
    if verdict is not None:
        return f"{'approved' if verdict.approved else 'denied'}: {verdict.comment}"
    return ""
