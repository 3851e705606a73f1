"""What a person usually has to do on this type's case: the lines "Add tasks from template"
adds on the Tasks tab (casework.cases.tasks.checklists), registered from the app's ready()."""

from __future__ import annotations

CHECKLIST: list[tuple[str, str]] = [
    ("confirm_manager", "Confirm the change with the employee's manager"),
    ("check_authorisation", "Check the authorisation records for the system and level"),
    ("revoke_if_unjustified", "Revoke the access if the change is not justified"),
]
