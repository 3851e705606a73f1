"""The status machine: the seed's edges are allowed, every other move is refused and
changes nothing, and every move is audited and carried onto the shared case status."""

from __future__ import annotations

import pytest

from audit.models import AuditEntry
from casework.access.states import (
    CASE_STATUS,
    TRANSITIONS,
    AccessStatus,
    mutation_transition,
    transition_allowed,
)
from casework.errors import Conflict, DomainError

pytestmark = pytest.mark.django_db

S = AccessStatus

# The seed's state diagram, edge by edge.
SEED_EDGES = [
    (S.PENDING, S.INVESTIGATION_STARTED),
    (S.INVESTIGATION_STARTED, S.APPROVED),
    (S.INVESTIGATION_STARTED, S.CLARIFICATION_REQUESTED),
    (S.CLARIFICATION_REQUESTED, S.AWAITING_USER_RESPONSE),
    (S.AWAITING_USER_RESPONSE, S.REJECTED_INVALID_CLAIM),
    (S.AWAITING_USER_RESPONSE, S.MANAGER_VERIFICATION_REQUESTED),
    (S.MANAGER_VERIFICATION_REQUESTED, S.AWAITING_MANAGER_RESPONSE),
    (S.AWAITING_MANAGER_RESPONSE, S.APPROVED),
    (S.AWAITING_MANAGER_RESPONSE, S.REJECTED_MANAGER_DENIED),
    (S.APPROVED, S.ADVISORY_REPORT_GENERATED),
    (S.REJECTED_INVALID_CLAIM, S.ADVISORY_REPORT_GENERATED),
    (S.REJECTED_MANAGER_DENIED, S.ADVISORY_REPORT_GENERATED),
    (S.INVESTIGATION_STARTED, S.MANUAL_INTERVENTION_REQUIRED),
    (S.MANUAL_INTERVENTION_REQUIRED, S.ADVISORY_REPORT_GENERATED),
]


def test_every_status_has_a_row_and_a_queue_status():
    assert set(TRANSITIONS) == set(S.values)
    assert set(CASE_STATUS) == set(S.values)
    assert CASE_STATUS[S.AWAITING_USER_RESPONSE] == CASE_STATUS[S.AWAITING_MANAGER_RESPONSE] == "awaiting_response"
    # Issue 13: agents never resolve a case; the report leaves it awaiting a decision.
    assert CASE_STATUS[S.ADVISORY_REPORT_GENERATED] == "awaiting_decision"


@pytest.mark.parametrize(("current", "to"), SEED_EDGES)
def test_the_seeds_edges_are_allowed(current, to):
    assert transition_allowed(current, to)


def test_nothing_leaves_the_final_status_and_nothing_reenters_pending():
    assert TRANSITIONS[S.DECIDED] == frozenset()
    assert TRANSITIONS[S.ADVISORY_REPORT_GENERATED] == frozenset({S.DECIDED})
    assert all(S.PENDING not in targets for targets in TRANSITIONS.values())


def test_a_person_decides_from_every_other_state_and_only_a_person():
    """Issue 22: a decision before the report left the change at Manual Intervention
    Required; Decided by the Investigator is reachable from every state, by a person alone."""
    from casework.access.states import ACCESS_LIFECYCLE

    for status in S:
        if status == S.DECIDED:
            continue
        move = ACCESS_LIFECYCLE.move(status, S.DECIDED)
        assert move is not None and move.by == {"person"}, status
    assert [s.key for s in ACCESS_LIFECYCLE.states if s.final] == ["decided"]


def test_only_working_states_may_escalate_to_manual_intervention():
    may = {s for s, targets in TRANSITIONS.items() if S.MANUAL_INTERVENTION_REQUIRED in targets}
    assert S.PENDING not in may and S.ADVISORY_REPORT_GENERATED not in may
    assert S.AWAITING_USER_RESPONSE in may  # the investigator takes a waiting case over


def _walk(mutation, *statuses):
    for status in statuses:
        mutation_transition(actor="system", mutation=mutation, to=status, reason="test")


def test_a_transition_is_audited_and_moves_the_case_in_the_queue(submit):
    mutation = submit(investigate=False)
    assert mutation.case.status == "new"
    _walk(mutation, S.INVESTIGATION_STARTED, S.CLARIFICATION_REQUESTED, S.USER_REQUEST_QUEUED)
    mutation.refresh_from_db()
    mutation.case.refresh_from_db()
    assert mutation.status == S.USER_REQUEST_QUEUED
    assert mutation.case.status == "awaiting_response"
    moves = list(AuditEntry.objects.filter(case_id=mutation.case_id, action="access.status_changed")
                 .values_list("data", flat=True))
    assert [(m["from"], m["to"]) for m in moves] == [
        ("pending", "investigation_started"), ("investigation_started", "clarification_requested"),
        ("clarification_requested", "user_request_queued")]
    assert moves[0]["to_label"] == "Investigation Started" and moves[0]["reason"] == "test"


@pytest.mark.parametrize(("path", "refused"), [
    ([], S.APPROVED),  # Pending cannot be approved without an investigation
    ([S.INVESTIGATION_STARTED], S.AWAITING_MANAGER_RESPONSE),
    ([S.INVESTIGATION_STARTED, S.CLARIFICATION_REQUESTED, S.USER_REQUEST_QUEUED], S.APPROVED),
    ([S.INVESTIGATION_STARTED, S.APPROVED], S.REJECTED_MANAGER_DENIED),
    ([S.INVESTIGATION_STARTED, S.APPROVED, S.ADVISORY_REPORT_GENERATED], S.MANUAL_INTERVENTION_REQUIRED),
    ([S.INVESTIGATION_STARTED, S.CLARIFICATION_REQUESTED], S.LINK_EXPIRED),
    ([S.INVESTIGATION_STARTED, S.MANUAL_INTERVENTION_REQUIRED], S.APPROVED),
])
def test_any_other_transition_is_refused_and_changes_nothing(submit, path, refused):
    mutation = submit(investigate=False)
    _walk(mutation, *path)
    before = AuditEntry.objects.count()
    current = mutation.status
    with pytest.raises(Conflict) as exc:
        mutation_transition(actor="system", mutation=mutation, to=refused, reason="test")
    assert exc.value.code == "transition_refused"
    assert AccessStatus(refused).label in exc.value.message
    mutation.refresh_from_db()
    assert mutation.status == current
    assert AuditEntry.objects.count() == before


def test_an_unknown_status_is_refused(submit):
    mutation = submit(investigate=False)
    with pytest.raises(DomainError):
        mutation_transition(actor="system", mutation=mutation, to="teleported", reason="")


def test_a_closed_case_keeps_its_queue_status_when_the_access_status_moves(submit, alice):
    from casework.cases.services import case_close

    mutation = submit(investigate=False)
    _walk(mutation, S.INVESTIGATION_STARTED)
    case_close(actor=alice, case=mutation.case, outcome="manual", reason="Handled on the phone.")
    _walk(mutation, S.MANUAL_INTERVENTION_REQUIRED)
    mutation.case.refresh_from_db()
    assert mutation.case.status == "closed"
