"""The checklist each case type starts from: what a person usually has to do on such a case,
registered by the type's package (checklist_register from its AppConfig.ready).

"Add tasks from template" on the Tasks tab (or POST .../tasks/from-template/) adds the lines
the case does not have yet. settings.CASE_TASK_TEMPLATES may replace a type's list:
{"fraud_alert": [("call_customer", "Call the customer"), ...]}. Keys are stable names, so a
second click adds nothing twice and a renamed title still counts as the same line.
"""

from __future__ import annotations

from django.conf import settings

# Each case type's list, registered from its AppConfig.ready (checklist_register), keyed by type.
DEFAULT_CHECKLISTS: dict[str, list[tuple[str, str]]] = {}


def checklist_register(case_type: str, lines: list[tuple[str, str]]) -> None:
    """The (key, title) lines a case of this type starts from."""
    DEFAULT_CHECKLISTS[case_type] = list(lines)


def checklist_for(case_type: str) -> list[tuple[str, str]]:
    """(key, title) lines of this case type's checklist, from settings or the defaults."""
    overrides = getattr(settings, "CASE_TASK_TEMPLATES", None) or {}
    return list(overrides.get(case_type, DEFAULT_CHECKLISTS.get(case_type, [])))
