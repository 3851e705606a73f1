"""What a person usually has to do on this type's case: the lines "Add tasks from template"
adds on the Tasks tab (casework.cases.tasks.checklists), registered from the app's ready()."""

from __future__ import annotations

CHECKLIST: list[tuple[str, str]] = [
    ("read_thread", "Read the whole thread and the customer's history"),
    ("check_reply", "Check the suggested reply against the knowledge-base article"),
    ("reply_customer", "Reply to the customer"),
]
