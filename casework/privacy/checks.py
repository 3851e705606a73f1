"""settings.RETENTION names only registered case types (the types register after settings are
read, so this is a system check, run at start-up)."""

from __future__ import annotations

from django.conf import settings
from django.core import checks


def retention_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    from casework.cases.types import CASE_TYPES

    errors = []
    for case_type in getattr(settings, "RETENTION", {}):
        if case_type not in CASE_TYPES:
            errors.append(checks.Error(f"RETENTION names an unknown case type {case_type!r}.",
                                       hint=f"Use one of: {', '.join(CASE_TYPES)}.", id="privacy.E001"))
        elif CASE_TYPES[case_type].retention is None:
            errors.append(checks.Error(f"RETENTION has a policy for {case_type!r}, which registers no personal "
                                       "data (casework.cases.types.Retention).", id="privacy.E002"))
    return errors
