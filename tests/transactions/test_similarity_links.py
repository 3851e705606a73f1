"""Transaction similarity sees the cases people linked (casework.entities): a decided
investigation linked to the asking one comes first at any distance, marked with the link's
kind, at most LINKED_SHOWN newest link first, never its own transaction, in one more query;
the reasoning cites it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from casework.cases.models import Case
from casework.cases.services import case_close
from casework.entities.selectors import LINKED_SHOWN
from casework.entities.services import case_link
from casework.transactions import similarity
from casework.transactions.agents.findings import reason
from casework.transactions.agents.tools import ToolInput, similarity_tool
from casework.transactions.models import CardAccount, Investigation, Transaction

pytestmark = pytest.mark.django_db
QUERY = [0.9, 0.1, 0.1, 0.1, 1.0, 0.0, 0.0, 0.0, 0.0]
FAR = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0]  # another bucket: never a feature match
N = iter(range(10_000))


def _investigation(vector, *, txn: Transaction | None = None) -> Investigation:
    n = next(N)
    if txn is None:
        account, _ = CardAccount.objects.get_or_create(account_id="LNK", defaults={"home_country": "NL"})
        txn = Transaction.objects.create(transaction_id=f"TX-LNK-{n}", account=account, card_last4="0000",
                                         amount=10, currency="EUR", merchant="Shop", mcc="5411", country="NL",
                                         channel="pos", occurred_at=datetime(2026, 3, 1, tzinfo=UTC))
    case = Case.objects.create(reference=f"TXN-L{n:05d}", case_type="transaction_investigation", title="t")
    return Investigation.objects.create(case=case, transaction=txn, status="COMPLETED", severity="LOW",
                                        features=vector, feature_bucket=similarity.bucket_of(vector))


def _decided(alice, vector, outcome="fraud", **kwargs) -> Investigation:
    inv = _investigation(vector, **kwargs)
    case_close(actor=alice, case=inv.case, outcome=outcome, reason="Checked.")
    return inv


def test_a_linked_decided_investigation_comes_first_at_any_distance(alice):
    asking = _investigation(QUERY)
    near = _decided(alice, [0.85, *QUERY[1:]], outcome="not_fraud")
    far = _decided(alice, FAR)
    assert [m["reference"] for m in similarity.nearest(QUERY, exclude_pk=asking.pk)] == [near.case.reference]

    case_link(actor=alice, from_case=far.case, to_case=asking.case, kind="parent", reason="Same ring.")
    matches = similarity.nearest(QUERY, exclude_pk=asking.pk)

    assert [(m["reference"], m.get("linked_as"), m["outcome"]) for m in matches] == [
        (far.case.reference, "parent", "fraud"), (near.case.reference, None, "not_fraud")]
    assert matches[0]["distance"] > similarity.MAX_DISTANCE


def test_undecided_links_and_the_same_transaction_are_not_similar(alice):
    asking = _investigation(QUERY)
    undecided = _investigation(FAR)
    again = _decided(alice, QUERY, txn=asking.transaction)
    linked = _decided(alice, [0.8, *QUERY[1:]], outcome="not_fraud")
    for other in (undecided, again, linked):
        case_link(actor=alice, from_case=asking.case, to_case=other.case, kind="related", reason="Linked.")
    matches = similarity.nearest(QUERY, exclude_pk=asking.pk)
    assert [(m["reference"], m.get("linked_as")) for m in matches] == [(linked.case.reference, "related")]


@pytest.mark.parametrize("links", [1, 8])
def test_linked_ones_are_capped_newest_first_at_the_same_queries(links, alice, django_assert_max_num_queries):
    asking = _investigation(QUERY)
    made = []
    for _ in range(links):
        other = _decided(alice, FAR)
        case_link(actor=alice, from_case=asking.case, to_case=other.case, kind="duplicate", reason="Twice.")
        made.append(other.case.reference)
    with django_assert_max_num_queries(4):
        matches = similarity.nearest(QUERY, exclude_pk=asking.pk)
    assert [m["reference"] for m in matches] == made[::-1][:LINKED_SHOWN]


def test_the_tool_and_the_reasoning_cite_the_linked_fraud(alice):
    asking = _investigation(QUERY)
    far = _decided(alice, FAR)
    case_link(actor=alice, from_case=asking.case, to_case=far.case, kind="related", reason="Same device.")
    patterns = {"patterns": [{"type": "velocity", "score": 0.9, "flagged": True, "detail": "burst",
                              "transaction_ids": []}], "signals": {"foreign": True}}
    result = similarity_tool(ToolInput(investigation_id=asking.pk, transaction_id=asking.transaction.transaction_id,
                                       state={"pattern_results": patterns}))
    assert result["decided"] == 1 and result["fraud_share"] == 1.0
    found = reason({"pattern_results": patterns, "similarity_results": result})
    known = next(h for h in found["hypotheses"] if h["key"] == "known_pattern")
    assert known["evidence"][0]["detail"] == (f"{far.case.reference} at distance {result['matches'][0]['distance']}"
                                              ", linked to this case by a person as related")
