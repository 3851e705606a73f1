"""Transaction similarity scores at most TXN_SIMILARITY_CANDIDATES past investigations of the
neighbouring buckets, the newest first, in the same queries whatever the history."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from casework.cases.models import Case
from casework.transactions import similarity
from casework.transactions.models import CardAccount, Investigation, Transaction

pytestmark = pytest.mark.django_db
QUERY = [0.9, 0.1, 0.1, 0.1, 1.0, 0.0, 0.0, 0.0, 0.0]


def _history(count: int) -> list[str]:
    """`count` completed investigations like QUERY, each a little farther than the one before
    (so the oldest is the nearest); their references, oldest first."""
    account = CardAccount.objects.create(account_id="CAP", home_country="NL")
    txn = Transaction.objects.create(transaction_id="TX-CAP", account=account, card_last4="0000", amount=10,
                                     currency="EUR", merchant="Shop", mcc="5411", country="NL", channel="pos",
                                     occurred_at=datetime(2026, 3, 1, tzinfo=UTC))
    references = []
    for i in range(count):
        case = Case.objects.create(reference=f"TXN-C{i:05d}", case_type="transaction_investigation", title="t")
        vector = [0.9 - i * 0.01, *QUERY[1:]]
        Investigation.objects.create(case=case, transaction=txn, status="COMPLETED", severity="LOW",
                                     features=vector, feature_bucket=similarity.bucket_of(vector))
        references.append(case.reference)
    return references


def test_the_cap_scores_the_newest_first(settings):
    references = _history(8)
    settings.TXN_SIMILARITY_CANDIDATES = 3
    assert [r["reference"] for r in similarity.nearest(QUERY)] == references[5:]
    settings.TXN_SIMILARITY_CANDIDATES = 100
    assert [r["reference"] for r in similarity.nearest(QUERY)] == references[:5]


@pytest.mark.parametrize("count", [3, 30])
def test_the_same_queries_at_any_history(count, settings, django_assert_num_queries):
    settings.TXN_SIMILARITY_CANDIDATES = 10
    _history(count)
    with django_assert_num_queries(3):
        assert len(similarity.nearest(QUERY)) == min(count, 5)
