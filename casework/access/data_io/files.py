"""The seed's CSV files and their columns, and how an import reports what went wrong."""

from __future__ import annotations

from dataclasses import dataclass, field

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
