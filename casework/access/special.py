"""Which fields of an access case are special-category (health): the kind and dates of a
colleague's absence an employee's claim names (sick leave or vacation: which one it was is a
health fact), and what quotes them (the employee's explanation, the records check's lines and
message). Who sees them whole is the case core's rule (casework/cases/masking.py): the teams
owning access changes; everyone else who sees the case gets them masked. The manager a
validation request is addressed to sees the claim they are asked to judge (`addressed`)."""

from __future__ import annotations

from casework.access.models import EmployeeClaim
from casework.cases.masking import masked_for

CASE_TYPE = "access_change"
ABSENCE_CLAIMS = (EmployeeClaim.ClaimType.SICK_LEAVE, EmployeeClaim.ClaimType.VACATION)
CLAIM_FIELDS = ("claim_type", "period_start", "period_end", "explanation", "validation")


def claim_masked(viewer, claim: EmployeeClaim, data: dict, *, addressed: bool = False) -> dict:
    """`data` (the claim's fields by name) with its absence details as `viewer` may see them."""
    if addressed or claim.claim_type not in ABSENCE_CLAIMS:
        return data
    return {name: masked_for(viewer, CASE_TYPE, "health", value) if name in CLAIM_FIELDS else value
            for name, value in data.items()}


def claim_shown(viewer, claim: EmployeeClaim, *, addressed: bool = False) -> dict:
    """What the claim's panel shows this person: its fields, masked where they must be, and
    `withheld` when they are."""
    whole = {"claim_type": claim.get_claim_type_display(), "period_start": claim.period_start,
             "period_end": claim.period_end, "explanation": claim.explanation, "validation": claim.validation}
    shown = claim_masked(viewer, claim, whole, addressed=addressed)
    return {**shown, "withheld": shown != whole}
