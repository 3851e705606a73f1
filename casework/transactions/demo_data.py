"""A generated card history: accounts with ordinary spending, and planted frauds (card
testing, a card-not-present burst abroad, a cloned card, a cash-out) for the demo and the
tests. Deterministic for a seed."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

EVERYDAY = [("5411", "Grocer"), ("5812", "Bistro"), ("5541", "Fuel station"), ("5912", "Pharmacy"),
            ("5311", "Department store"), ("4121", "Taxi"), ("5814", "Coffee bar"), ("4111", "Metro")]
COUNTRIES = ["NL", "DE", "FR", "BE", "ES", "IT", "GB", "IE"]
END = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _row(rng, n, account, home, at, amount, mcc, merchant, country=None, channel="pos", device="", fraud=False):
    return {"transaction_id": f"TX-{account[-4:]}-{n:05d}", "account_id": account, "card_last4": account[-4:],
            "amount": f"{amount:.2f}", "currency": "EUR", "merchant": merchant, "mcc": mcc,
            "country": country or home, "channel": channel, "device_id": device, "occurred_at": at.isoformat(),
            "home_country": home, "holder_name": f"Holder {account[-4:]}", "is_fraud": fraud}


def card_history(account: str, *, seed: int = 1, days: int = 60, per_day: float = 2.0,
                 home: str | None = None) -> list[dict]:
    """Ordinary spending on one card: everyday merchants at home, now and then online."""
    rng = random.Random(f"{account}-{seed}")
    home = home or rng.choice(COUNTRIES)
    rows = []
    start = END - timedelta(days=days)
    count = int(days * per_day)
    for n in range(count):
        at = start + timedelta(minutes=rng.randrange(days * 24 * 60 - 120))
        mcc, merchant = rng.choice(EVERYDAY)
        online = rng.random() < 0.15
        rows.append(_row(rng, n, account, home, at, rng.lognormvariate(3.2, 0.6), "5999" if online else mcc,
                         "Web shop" if online else merchant, channel="ecommerce" if online else
                         rng.choice(["pos", "contactless"]), device="dev-home" if online else ""))
    rows.sort(key=lambda r: r["occurred_at"])
    return rows


def planted(kind: str, account: str, history: list[dict], *, at: datetime | None = None) -> list[dict]:
    """The rows of one fraud scenario on this card, the investigated transaction last."""
    rng = random.Random(f"{account}-{kind}")
    home = history[0]["home_country"] if history else "NL"
    at = at or END + timedelta(hours=1)
    n = 90_000 + len(history)
    if kind == "card_testing":
        rows = [_row(rng, n + i, account, home, at - timedelta(minutes=40 - 9 * i), 1 + i * 0.5, "5815",
                     "Digital goods", country="US", channel="ecommerce", device="dev-x") for i in range(3)]
        rows.append(_row(rng, n + 9, account, home, at, 1899.00, "5732", "Electronics megastore", country="US",
                         channel="ecommerce", device="dev-x"))
        return rows
    if kind == "cnp_burst":
        rows = [_row(rng, n + i, account, home, at - timedelta(minutes=30 - 6 * i), 240 + 35 * i, "5944",
                     "Jewellery online", country="RO", channel="ecommerce", device="dev-y") for i in range(4)]
        rows.append(_row(rng, n + 9, account, home, at, 1250.00, "5944", "Jewellery online", country="RO",
                         channel="ecommerce", device="dev-y"))
        return rows
    if kind == "cloned_card":
        return [_row(rng, n, account, home, at - timedelta(minutes=50), 35.0, "5411", "Grocer"),
                _row(rng, n + 9, account, home, at, 640.0, "6051", "Exchange office", country="TH", channel="pos")]
    if kind == "cash_out":
        rows = [_row(rng, n + i, account, home, at - timedelta(minutes=25 - 5 * i), 300.0, "6051", "ATM network",
                     channel="atm") for i in range(4)]
        rows.append(_row(rng, n + 9, account, home, at, 500.0, "6051", "ATM network", channel="atm"))
        return rows
    if kind == "travel":
        return [_row(rng, n + 9, account, home, at, 86.40, "5812", "Trattoria", country="PT", channel="contactless")]
    if kind == "ordinary":
        return [_row(rng, n + 9, account, home, at, 42.10, "5411", "Grocer", channel="contactless")]
    if kind == "big_ticket":
        return [_row(rng, n + 9, account, home, at, 720.0, "5311", "Department store", channel="pos")]
    if kind == "big_ticket_known_online":  # the card's own web shop, from its own device, at home
        return [_row(rng, n + 9, account, home, at, 1150.0, "5999", "Web shop", channel="ecommerce",
                     device="dev-home")]
    raise ValueError(kind)
