"""Look-alikes see the cases people linked (casework.entities): a decided alert linked to this
one comes first among its look-alikes at any distance, marked with the link's kind, at most
LINKED_SHOWN of them newest link first, at one more query whatever the history; the agents
are shown it and the page marks it."""

from __future__ import annotations

import pytest

from agents.models import AgentRun
from agents.tasks import run_pipeline
from casework.entities.selectors import LINKED_SHOWN
from casework.entities.services import case_link
from casework.fraud.selectors import similar_decided
from tests.fraud.conftest import CLEAN, CYCLING

pytestmark = pytest.mark.django_db


def _far(make_alert, decide, alice, n: int, outcome: str = "confirmed_fraud"):
    """A decided alert that looks nothing like CYCLING (a clean account)."""
    alert = make_alert(**{**CLEAN, "account_id": f"ACC-FAR-{n}", "deposits_count": 10 + n})
    decide(alert, alice, outcome=outcome)
    return alert


def test_a_linked_decided_alert_comes_first_at_any_distance_with_its_kind(alice, make_alert, decide):
    near = make_alert(**{**CYCLING, "account_id": "ACC-NEAR"})
    decide(near, alice)
    far_fraud, far_legit = _far(make_alert, decide, alice, 1), _far(make_alert, decide, alice, 2, "legit")
    new = make_alert(**{**CYCLING, "account_id": "ACC-NEW"})
    before = similar_decided(new)
    assert [n.reference for n in before.confirmed] == [near.case.reference] and not before.cleared

    case_link(actor=alice, from_case=new.case, to_case=far_fraud.case, kind="parent", reason="Same ring.")
    case_link(actor=alice, from_case=far_legit.case, to_case=new.case, kind="duplicate", reason="Same person.")
    found = similar_decided(new)

    assert [(n.reference, n.link) for n in found.confirmed] == [(far_fraud.case.reference, "child"),
                                                                (near.case.reference, "")]
    assert found.confirmed[0].distance > 3.0 and found.confirmed_count == 2
    assert [(c["reference"], c["linked_as"], c["outcome"]) for c in found.cleared] == [
        (far_legit.case.reference, "duplicate", "legit")]
    assert found.cleared_count == 1


def test_a_linked_neighbour_is_shown_once_and_an_undecided_link_not_at_all(alice, make_alert, decide):
    near = make_alert(**{**CYCLING, "account_id": "ACC-NEAR"})
    decide(near, alice)
    open_alert = make_alert(**{**CLEAN, "account_id": "ACC-OPEN"})
    new = make_alert(**{**CYCLING, "account_id": "ACC-NEW"})
    case_link(actor=alice, from_case=near.case, to_case=new.case, kind="parent", reason="Its parent.")
    case_link(actor=alice, from_case=new.case, to_case=open_alert.case, kind="related", reason="Same device.")
    found = similar_decided(new)
    assert [(n.reference, n.link) for n in found.confirmed] == [(near.case.reference, "parent")]
    assert found.confirmed_count == 1


@pytest.mark.parametrize("history", [2, 12])
def test_linked_ones_are_capped_newest_link_first_at_the_same_queries(history, alice, make_alert, decide,
                                                                      django_assert_max_num_queries):
    new = make_alert(**{**CYCLING, "account_id": "ACC-NEW"})
    linked = []
    for n in range(history):
        other = _far(make_alert, decide, alice, n)
        case_link(actor=alice, from_case=new.case, to_case=other.case, kind="related", reason=f"Link {n}.")
        linked.append(other.case.reference)
    with django_assert_max_num_queries(4):
        found = similar_decided(new)
    assert [n.reference for n in found.confirmed] == linked[::-1][:LINKED_SHOWN]
    assert found.confirmed_count == min(history, LINKED_SHOWN)


def test_the_agents_are_shown_the_linked_case_and_the_page_marks_it(alice, alice_client, make_alert, decide):
    far = _far(make_alert, decide, alice, 1)
    AgentRun.objects.update(status=AgentRun.Status.COMPLETED)
    new = make_alert(**{**CYCLING, "account_id": "ACC-NEW"})
    case_link(actor=alice, from_case=new.case, to_case=far.case, kind="related", reason="Same device.")
    run = AgentRun.objects.get(case=new.case, pipeline="fraud")

    run_pipeline(run.pk)

    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert run.state["input_similar_cases"][0] == {"reference": far.case.reference, "account_id": "ACC-FAR-1",
                                                   "distance": run.state["input_similar_cases"][0]["distance"],
                                                   "linked_as": "related"}
    explanation = run.results["outcome_similarity"]["output"]["explanation"]
    assert f"linked by a person and confirmed as fraud: {far.case.reference} (related)" in explanation
    page = alice_client.get(f"/cases/{new.case.reference}/").content.decode()
    assert "linked: related" in page
