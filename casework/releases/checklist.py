"""What a person usually has to do on this type's case: the lines "Add tasks from template"
adds on the Tasks tab (casework.cases.tasks.checklists), registered from the app's ready()."""

from __future__ import annotations

CHECKLIST: list[tuple[str, str]] = [
    ("review_failed_tests", "Review the failed tests in the critical areas"),
    ("confirm_rollback", "Confirm the rollback plan with the release manager"),
    ("sign_off", "Get the release sign-off from the owning team"),
]
