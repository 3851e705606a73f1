"""The investigator decides; a case closed by any path stops the flow."""

from __future__ import annotations

import logging

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from audit.services import audit_record
from casework.access.models import (
    HRMutation,
)
from casework.access.services.requests import requests_cancel_open
from casework.access.states import FINAL, MANUAL, mutation_transition
from casework.errors import Conflict

logger = logging.getLogger(__name__)


@transaction.atomic
def mutation_decide(*, actor: User, mutation: HRMutation, outcome: str, reason: str):
    """Close the case with the investigator's decision, which may override the advisory
    recommendation. A case still being investigated goes to Manual Intervention Required
    first, and any open request to a person is withdrawn."""
    from casework.cases.services import case_close

    mutation = HRMutation.objects.select_related("case").get(pk=mutation.pk)
    if mutation.case.is_closed:
        raise Conflict(f"{mutation.case.reference} is already closed.", code="already_closed")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Give a reason for the decision."})
    report = mutation.reports.first()
    if mutation.status not in FINAL and mutation.status != MANUAL:
        mutation_transition(actor=actor, mutation=mutation, to=MANUAL,
                            reason=f"The investigator decided before the investigation finished: {reason}")
    requests_cancel_open(actor=actor, mutation=mutation, reason="The investigator decided the case.")
    decision = case_close(actor=actor, case=mutation.case, outcome=outcome, reason=reason)
    audit_record(actor=actor, action="access.decided", case=mutation.case, obj=mutation,
                 data={"outcome": outcome, "recommendation": report.recommendation if report else None,
                       "overrides_recommendation": bool(report and report.proposed_outcome != outcome),
                       "status": mutation.status})
    return decision


def mutation_after_case_closed(*, case, actor) -> None:
    """A case closed by any path (the generic close form, the API) withdraws open requests
    and, if the investigation was still running, stops it at Manual Intervention Required."""
    mutation = HRMutation.objects.filter(case=case).first()
    if mutation is None:
        return
    with transaction.atomic():
        requests_cancel_open(actor=actor or "system", mutation=mutation, reason="The case was closed.")
        if mutation.status not in FINAL and mutation.status != MANUAL:
            mutation_transition(actor=actor or "system", mutation=mutation, to=MANUAL,
                                reason="The case was closed before the investigation finished.")
