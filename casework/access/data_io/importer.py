"""Import, all or nothing: every file read and every row checked in one transaction, rows
matched on their ids (importing twice changes nothing), Pending mutations investigated after
the commit."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from audit.services import audit_record
from casework.access.data_io.files import COLUMNS, EXPORT_ONLY, ImportFailed, ImportResult, Problem
from casework.access.data_io.rows import _Row
from casework.access.models import (
    AccessLevel,
    DirectAuthorisation,
    Employee,
    HRMutation,
    Role,
    RoleAuthorisation,
    SickLeave,
    System,
    Vacation,
)
from casework.access.states import AccessStatus


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
            yield _Row(self.problems, name, skipped + reader.line_num, data)

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
                # The dates are encrypted at rest: the period is found among the employee's records.
                existing = model.objects.period(employee, start, end)
                self._upsert(row, model, {"pk": existing.pk} if existing else
                             {"employee": employee, "start_date": start, "end_date": end},
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
