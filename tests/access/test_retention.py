"""An access review's absence details (special-category health data) go six months after the
decision (issue 42.1); the case, the change and the decision stay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from casework.access.models import EmployeeClaim
from casework.access.retention import REMOVED
from casework.cases.models import Case, Decision
from casework.privacy.retention import retention_run

NOW = datetime(2030, 6, 1, tzinfo=UTC)


@pytest.mark.django_db
def test_the_absence_details_go_six_months_after_the_decision(awaiting_manager, alice,
                                                               django_capture_on_commit_callbacks):
    from casework.access.services import mutation_decide

    mutation = awaiting_manager.mutation
    with django_capture_on_commit_callbacks(execute=True):
        mutation_decide(actor=alice, mutation=mutation, outcome="rejected", reason="Not covered by the absence.")
    Decision.objects.filter(case=mutation.case, final=True).update(decided_at=NOW - timedelta(days=184))

    assert retention_run(now=NOW - timedelta(days=2)).purged == {}
    assert retention_run(now=NOW).purged == {mutation.case.reference: "access_change=183@decided"}

    claim = EmployeeClaim.objects.get(request__mutation=mutation)
    assert (claim.claim_type, claim.period_start, claim.period_end, claim.explanation, claim.validation) == \
        ("other", None, None, REMOVED, {})
    assert Case.objects.filter(pk=mutation.case_id, status="closed").exists()
    assert Decision.objects.get(case=mutation.case, final=True).outcome == "rejected"
