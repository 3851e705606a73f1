"""What a person usually has to do on this type's case: the lines "Add tasks from template"
adds on the Tasks tab (casework.cases.tasks.checklists), registered from the app's ready()."""

from __future__ import annotations

CHECKLIST: list[tuple[str, str]] = [
    ("call_customer", "Call the customer to confirm the recent activity"),
    ("freeze_account", "Freeze the account while the investigation runs"),
    ("check_devices", "Check the devices and IP addresses against known mule networks"),
    ("file_report", "File a suspicious activity report if fraud is confirmed"),
]
