"""Special-category fields: shown whole only to those who need them (issue 41).

The one rule: the members of a team that owns the case's type (`user_in_owning_team`) see a
special-category value whole; everyone else who sees the case (an admin outside the team, a
person named on a restricted case from another team) sees it masked, in pages, API answers,
reports and exports alike. The categories:

  health  the kind and dates of an absence (sick leave or vacation: which one is itself a
          health fact), and text that quotes them: withheld entirely
  email   a full e-mail address: its first letter and domain (j***@example.com), as the
          entities panel shows every address (casework.entities.kinds)
  card    a full card number: its BIN and last four (411111…1111), as entities keep cards

A case type says which of its fields are special by calling `masked_for` (from its
serializers and exports) or `{% masked %}` (casework/cases/templatetags/case_masking.py) on
them; it never repeats who may see them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from casework.cases.visibility import user_in_owning_team

HEALTH_MASKED = "withheld (special category)"
CARD_MASKED = "card number withheld"
EMAIL_MASKED = "address withheld"


def _health(value) -> str:
    return HEALTH_MASKED


def email_masked(value) -> str:
    """j***@example.com: the first letter and the domain."""
    local, at, domain = str(value).strip().lower().rpartition("@")
    return f"{local[0]}***@{domain}" if at and local and domain else EMAIL_MASKED


def card_masked(value) -> str:
    """411111…1111: the BIN and last four of a card number (what entities keep of a card)."""
    digits = re.sub(r"[\s-]", "", str(value))
    return f"{digits[:6]}…{digits[-4:]}" if digits.isdigit() and 12 <= len(digits) <= 19 else CARD_MASKED


MASKERS: dict[str, Callable[[object], str]] = {"health": _health, "email": email_masked, "card": card_masked}


def sees_special(user, case_type: str) -> bool:
    """Whether this person sees the special-category fields of this type's cases whole. Nobody
    (None: no person) sees them masked: a caller that acts for the system decides for itself."""
    return user is not None and user_in_owning_team(user, case_type)


def masked_for(user, case_type: str, category: str, value):
    """`value` as this person may see it on a case of `case_type`: whole for a member of a team
    owning the type, masked (by `category`) for anyone else. Empty values stay empty."""
    if category not in MASKERS:
        raise ValueError(f"Unknown special category {category!r}: one of {', '.join(MASKERS)}.")
    if value is None or value == "" or sees_special(user, case_type):
        return value
    return MASKERS[category](value)
