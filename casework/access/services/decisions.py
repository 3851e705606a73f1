"""The investigator decides; a case closed by any path stops the flow and says who decided."""

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
from casework.access.states import DECIDED, mutation_transition
from casework.errors import Conflict

logger = logging.getLogger(__name__)


def _decided_reason(decision, *, how: str) -> str:
    who = decision.decided_by.get_username() if decision.decided_by else "a person"
    return f"{who} decided ({decision.outcome_label}) {how}: {decision.reason}"


@transaction.atomic
def mutation_decide(*, actor: User, mutation: HRMutation, outcome: str, reason: str):
    """Close the case with the investigator's decision, which may override the advisory
    recommendation: any open request to a person is withdrawn, the case closes, and the
    access status becomes Decided by the Investigator (from whatever state the flow was in:
    a decision before the report is still a person's decision, not Manual Intervention)."""
    from casework.cases.services import case_close

    mutation = HRMutation.objects.select_related("case").get(pk=mutation.pk)
    if mutation.case.is_closed:
        raise Conflict(f"{mutation.case.reference} is already closed.", code="already_closed")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Give a reason for the decision."})
    report = mutation.reports.first()
    before = mutation.status
    requests_cancel_open(actor=actor, mutation=mutation, reason="The investigator decided the case.")
    decision = case_close(actor=actor, case=mutation.case, outcome=outcome, reason=reason)
    how = "on the advisory report" if report else f"before the investigation finished (it was {mutation.status_label})"
    mutation_transition(actor=actor, mutation=mutation, to=DECIDED, reason=_decided_reason(decision, how=how))
    audit_record(actor=actor, action="access.decided", case=mutation.case, obj=mutation,
                 data={"outcome": outcome, "recommendation": report.recommendation if report else None,
                       "overrides_recommendation": bool(report and report.proposed_outcome != outcome),
                       "status": before})
    return decision


def mutation_after_case_closed(*, case, actor, decision=None) -> None:
    """A case closed by any other path (the generic close form, the API, a bulk close)
    withdraws open requests and moves the access status to Decided by the Investigator,
    saying how. Only a person closes a case, so only a person makes this move."""
    mutation = HRMutation.objects.filter(case=case).first()
    if mutation is None:
        return
    with transaction.atomic():
        requests_cancel_open(actor=actor or "system", mutation=mutation, reason="The case was closed.")
        mutation.refresh_from_db()
        if mutation.status != DECIDED:
            decision = decision or case.decisions.filter(final=True).select_related("decided_by").first()
            how = "through the case's close" + ("" if mutation.reports.exists()
                                                  else f", before the investigation finished (it was "
                                                       f"{mutation.status_label})")
            mutation_transition(actor=actor, mutation=mutation, to=DECIDED,
                                reason=_decided_reason(decision, how=how) if decision else "The case was closed.")
