"""Links across cards: the context tool sees other cards sharing a device, an IP address, an
email or (where it carried fraud) a merchant, and the analyst names a ring."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from casework.transactions.ingest import transactions_import
from tests.transactions.conftest import investigate

pytestmark = pytest.mark.django_db(transaction=True)

WHEN = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def row(n, card, *, device="", ip=None, email="", merchant_id="", is_fraud=False, minutes=0):
    return {"transaction_id": f"TX-{card}-{n}", "account_id": card, "card_last4": "1111", "amount": "80.00",
            "currency": "EUR", "merchant": "Shop", "mcc": "5999", "country": "NL", "channel": "ecommerce",
            "occurred_at": (WHEN + timedelta(minutes=minutes)).isoformat(), "home_country": "NL",
            "device_id": device, "ip_address": ip, "email": email, "merchant_id": merchant_id, "is_fraud": is_fraud}


def test_a_card_sharing_a_device_with_confirmed_fraud_shows_as_a_ring(run_investigation):
    transactions_import(actor="system", rows=[
        row(1, "CARD-B", device="dev-ring", is_fraud=True),
        row(1, "CARD-C", ip="203.0.113.9", email="mule@example.com", is_fraud=True),
        row(1, "CARD-D", merchant_id="M-77"),  # shares only a merchant, no fraud there: not a link
        row(1, "CARD-A", device="dev-ring", ip="203.0.113.9", email="Mule@example.com", merchant_id="M-77",
            minutes=5),
    ])
    investigation = investigate("TX-CARD-A-1")
    linked = investigation.state["context"]["linked_cards"]
    assert [c["account_id"] for c in linked] == ["CARD-C", "CARD-B"]
    assert all(c["confirmed_fraud"] for c in linked)
    assert linked[0]["shares"][0].startswith("IP 203.0.113.9") or "email" in linked[0]["shares"][0]
    top = investigation.state["reasoning"]["hypotheses"]
    ring = next(h for h in top if h["key"] == "fraud_ring")
    assert "2 cards with confirmed fraud" in ring["statement"]
    assert any("CARD-B shares device dev-ring" == e["detail"] for e in ring["evidence"])


def test_no_links_no_ring(run_investigation):
    transactions_import(actor="system", rows=[row(1, "CARD-B", device="dev-other", is_fraud=True),
                                              row(1, "CARD-A", device="dev-mine", minutes=5)])
    investigation = investigate("TX-CARD-A-1")
    assert investigation.state["context"]["linked_cards"] == []
    assert all(h["key"] != "fraud_ring" for h in investigation.state["reasoning"]["hypotheses"])
