"""The reason a person gives for an act that goes on record (restricting a case, changing its
budget, a legal hold, a subject-access export, an erasure): required, trimmed, bounded. One
check for all of them, so each answers a missing or long reason the same way (a 400 naming the
field)."""

from __future__ import annotations

from django.core.exceptions import ValidationError

REASON_MAX_LENGTH = 2_000


def reason_on_record(reason: str, *, field: str = "reason", ask: str = "Say why (it is on record).") -> str:
    """`reason` trimmed; a ValidationError on `field` when it is empty (`ask` says what to give)
    or longer than REASON_MAX_LENGTH."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({field: ask})
    if len(reason) > REASON_MAX_LENGTH:
        raise ValidationError({field: f"At most {REASON_MAX_LENGTH} characters."})
    return reason
