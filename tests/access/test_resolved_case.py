"""A person's word on the shared case stands while the type's own state moves on: a case a
person resolved is not pulled back into the queue by its agents (the shared lifecycle
service skips the queue move for resolved and closed cases)."""

from __future__ import annotations

import pytest

from casework.access.states import AccessStatus as S
from casework.access.states import mutation_transition
from casework.cases.services import case_set_status

pytestmark = pytest.mark.django_db


def test_a_resolved_case_stays_resolved_when_its_access_status_moves(submit, alice):
    mutation = submit(investigate=False)
    case_set_status(actor=alice, case=mutation.case, status="resolved")
    mutation_transition(actor="agent:access_orchestrator", mutation=mutation, to=S.INVESTIGATION_STARTED, reason="t")
    mutation_transition(actor="agent:access_orchestrator", mutation=mutation, to=S.APPROVED, reason="t")
    mutation.refresh_from_db()
    mutation.case.refresh_from_db()
    assert mutation.status == S.APPROVED
    assert mutation.case.status == "resolved"
