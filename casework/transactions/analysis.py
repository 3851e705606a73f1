"""What the investigation tools compute from a card's history: the context, and the
velocity, amount, geography and MCC patterns (seed 003's pattern_tool).

Pure functions over plain rows (dicts), so they are tested without a database; the loaders
at the bottom read the rows.
"""

from __future__ import annotations

import math
import statistics
from datetime import datetime, timedelta

from django.template.defaultfilters import pluralize

HISTORY_DAYS = 90
HISTORY_LIMIT = 500
# Quasi-cash, money transfer, gambling, crypto, electronics, jewellery, gift cards: what
# fraudsters cash out through (Visa/Mastercard high-risk MCC lists, abridged).
HIGH_RISK_MCC = {"4829": "money transfer", "6051": "quasi-cash / crypto", "6211": "securities brokers",
                 "7995": "gambling", "5732": "electronics", "5944": "jewellery", "5815": "digital goods",
                 "6540": "stored-value / gift cards"}
CARD_NOT_PRESENT = {"ecommerce", "moto"}
SMALL_TEST_AMOUNT = 5.0


def txn_row(txn) -> dict:
    return {"transaction_id": txn.transaction_id, "amount": float(txn.amount), "currency": txn.currency,
            "merchant": txn.merchant, "mcc": txn.mcc, "country": txn.country, "channel": txn.channel,
            "device_id": txn.device_id, "occurred_at": txn.occurred_at.isoformat(), "is_fraud": txn.is_fraud}


def _at(row: dict) -> datetime:
    return datetime.fromisoformat(row["occurred_at"])


def _pattern(kind: str, flagged: bool, score: float, detail: str, ids=()) -> dict:
    return {"type": kind, "flagged": flagged, "score": round(max(0.0, min(1.0, score)), 3), "detail": detail,
            "transaction_ids": list(ids)}


def velocity_pattern(txn: dict, history: list[dict]) -> dict:
    at = _at(txn)
    last_hour = [h for h in history if at - timedelta(hours=1) <= _at(h) <= at]
    last_day = [h for h in history if at - timedelta(hours=24) <= _at(h) <= at]
    if history:
        span_days = max(1.0, (at - min(_at(h) for h in history)).total_seconds() / 86400)
        daily = len(history) / span_days
    else:
        daily = 0.0
    expected = max(1.0, daily)
    ratio = (len(last_day) + 1) / expected
    flagged = len(last_hour) >= 3 or (len(last_day) >= 4 and ratio >= 3)
    score = min(1.0, len(last_hour) / 5 + max(0.0, ratio - 1) / 8)
    detail = (f"{len(last_hour) + 1} transactions in the hour up to this one and {len(last_day) + 1} in 24 h, "
              f"against {daily:.1f} a day usually.")
    pattern = _pattern("velocity", flagged, score if flagged else score / 3, detail,
                       [h["transaction_id"] for h in last_day] if flagged else [])
    # The burst, counted as a velocity rule would (this one included): in the 10 minutes up to
    # it, or the hour; and how many of those were small test charges.
    last_10m = [h for h in last_hour if at - timedelta(minutes=10) <= _at(h)]
    window, burst = ("10m", last_10m) if len(last_10m) >= 2 else ("1h", last_hour)
    pattern["burst"] = {"window": window, "count": len(burst) + 1,
                        "small": sum(1 for h in [*burst, txn] if h["amount"] <= SMALL_TEST_AMOUNT)}
    return pattern


def amount_pattern(txn: dict, history: list[dict]) -> dict:
    amounts = [h["amount"] for h in history]
    amount = txn["amount"]
    at = _at(txn)
    tests = [h for h in history if h["amount"] <= SMALL_TEST_AMOUNT and at - timedelta(hours=24) <= _at(h) < at]
    if len(amounts) < 3:
        flagged = amount >= 1000 or (bool(tests) and amount >= 100)
        detail = f"{amount:,.2f} {txn['currency']} with too little history to compare ({len(amounts)} earlier)."
        score = 0.5 if flagged else 0.1
    else:
        median = statistics.median(amounts)
        mean = statistics.fmean(amounts)
        spread = statistics.pstdev(amounts) or 1.0
        z = (amount - mean) / spread
        ratio = amount / median if median else 0.0
        flagged = (ratio >= 4 and amount >= 100) or z >= 4 or (bool(tests) and amount >= 5 * SMALL_TEST_AMOUNT)
        score = min(1.0, max(0.0, math.log(max(ratio, 1e-9), 10) / 1.5) + (0.3 if tests else 0.0))
        detail = (f"{amount:,.2f} {txn['currency']} is {ratio:.1f}x this card's median of {median:,.2f} "
                  f"(z = {z:.1f}).")
    if tests:
        detail += (f" {len(tests)} small test charge{pluralize(len(tests))} of at most {SMALL_TEST_AMOUNT:g} "
                   "in the 24 h before.")
    return _pattern("amount", flagged, score, detail, [h["transaction_id"] for h in tests])


def geography_pattern(txn: dict, history: list[dict], home_country: str) -> dict:
    at = _at(txn)
    seen = {h["country"] for h in history}
    foreign = txn["country"] != home_country
    new_country = txn["country"] not in seen and txn["country"] != home_country
    near = [h for h in history if abs((at - _at(h)).total_seconds()) <= 2 * 3600
            and h["country"] != txn["country"] and h["channel"] not in CARD_NOT_PRESENT]
    impossible = bool(near) and txn["channel"] not in CARD_NOT_PRESENT
    flagged = new_country or impossible
    score = (0.5 if new_country else 0.15 if foreign else 0.0) + (0.45 if impossible else 0.0)
    parts = [f"{txn['country']} ({'abroad' if foreign else 'home'}; home is {home_country})"]
    if new_country:
        parts.append("a country this card has never been used in")
    if impossible:
        parts.append(f"card present in {near[0]['country']} within 2 h: impossible travel")
    return _pattern("geography", flagged, score, "; ".join(parts) + ".", [h["transaction_id"] for h in near])


def mcc_pattern(txn: dict, history: list[dict]) -> dict:
    seen = {h["mcc"] for h in history}
    new_mcc = txn["mcc"] not in seen
    risky = HIGH_RISK_MCC.get(txn["mcc"])
    flagged = bool(risky) and (new_mcc or len(history) < 3)
    score = (0.4 if risky else 0.0) + (0.25 if new_mcc and history else 0.0)
    detail = f"MCC {txn['mcc']}" + (f" ({risky}, high risk)" if risky else "") + \
        (", new for this card." if new_mcc and history else ", used by this card before." if not new_mcc else ".")
    return _pattern("mcc", flagged, score, detail)


# How much of an unusual amount's score stands when the card's own history says the purchase is
# in character (a merchant it knows, at home, from its own device or card present): alone, such
# an amount is worth asking the cardholder about (medium), not blocking the card (high).
IN_CHARACTER_AMOUNT_WEIGHT = 0.5


def in_character(txn: dict, history: list[dict], home_country: str) -> str:
    """Why the card's own history makes this purchase in character, or "": a merchant the card
    has paid before, in its home country, and either card present or from a device the card
    has used before."""
    visits = sum(1 for h in history if h["merchant"] == txn["merchant"])
    if not visits or txn["country"] != home_country:
        return ""
    if txn["channel"] in CARD_NOT_PRESENT:
        if not txn["device_id"] or txn["device_id"] not in {h["device_id"] for h in history}:
            return ""
        how = "from a device it has used before"
    else:
        how = "card present"
    return (f"{txn['merchant']} is a merchant this card has used before ({visits} time{pluralize(visits)} in "
            f"{HISTORY_DAYS} days), at home, {how}.")


def patterns_for(txn: dict, history: list[dict], home_country: str) -> dict:
    """All four patterns, an overall risk score (flagged ones combined as independent
    evidence: 1 - prod(1 - score)) and the history rows the flagged patterns point at. An
    unusual amount in a purchase the card's own history calls in character (`in_character`)
    weighs IN_CHARACTER_AMOUNT_WEIGHT of its score, and says why."""
    patterns = [velocity_pattern(txn, history), amount_pattern(txn, history),
                geography_pattern(txn, history, home_country), mcc_pattern(txn, history)]
    familiar = in_character(txn, history, home_country)
    amount = patterns[1]
    if familiar and amount["flagged"]:
        amount.update(score=round(amount["score"] * IN_CHARACTER_AMOUNT_WEIGHT, 3),
                      detail=f"{amount['detail']} {familiar}")
    flagged = [p for p in patterns if p["flagged"]]
    risk = 1.0 - math.prod(1.0 - p["score"] for p in flagged) if flagged else max(p["score"] for p in patterns) / 2
    device_new = bool(txn["device_id"]) and txn["device_id"] not in {h["device_id"] for h in history}
    return {
        "patterns": patterns,
        "flagged": [p["type"] for p in flagged],
        "risk_score": round(risk, 3),
        "flagged_transaction_ids": sorted({i for p in flagged for i in p["transaction_ids"]}),
        "signals": {
            "foreign": txn["country"] != home_country,
            "card_not_present": txn["channel"] in CARD_NOT_PRESENT,
            "high_risk_mcc": txn["mcc"] in HIGH_RISK_MCC,
            "new_device": device_new and txn["channel"] in CARD_NOT_PRESENT,
            "in_character": bool(familiar),
        },
    }


# --- loaders --------------------------------------------------------------------------------

def load_history(txn) -> list[dict]:
    """The account's transactions in the HISTORY_DAYS before this one, newest first."""
    from casework.transactions.models import Transaction

    since = txn.occurred_at - timedelta(days=HISTORY_DAYS)
    rows = (Transaction.objects.filter(account_id=txn.account_id, occurred_at__gte=since,
                                       occurred_at__lte=txn.occurred_at)
            .exclude(pk=txn.pk).order_by("-occurred_at", "-id")[:HISTORY_LIMIT])
    return [txn_row(t) for t in rows]


def load_context(transaction_id: str) -> dict:
    from casework.transactions.models import Transaction

    txn = Transaction.objects.select_related("account").get(transaction_id=transaction_id)
    history = load_history(txn)
    amounts = [h["amount"] for h in history]
    return {
        "transaction": txn_row(txn),
        "account": {"account_id": txn.account.account_id, "home_country": txn.account.home_country,
                    "card_last4": txn.card_last4},
        "history_count": len(history),
        "history_days": HISTORY_DAYS,
        "history_median_amount": round(statistics.median(amounts), 2) if amounts else None,
        "history_countries": sorted({h["country"] for h in history}),
        "recent": history[:10],
        "linked_cards": linked_cards(txn),
    }


LINK_KEYS = (("device_id", "device"), ("ip_address", "IP"), ("email_hash", "email"), ("merchant_id", "merchant"))
LINKS_PER_KEY = 50
LINKED_SHOWN = 20


def linked_cards(txn) -> list[dict]:
    """Other cards that share this transaction's device, IP address, email (its hash) or
    merchant id, each with what it shares and whether it carries confirmed fraud: a ring shows
    as a ring. Each key is one indexed lookup of at most LINKS_PER_KEY rows (never a scan);
    a merchant counts only where the other card had confirmed fraud at it (everyone shares a
    big merchant). Cards with fraud first, then by how much they share."""
    from casework.transactions.models import Transaction

    shared: dict[int, set[str]] = {}
    fraud: set[int] = set()
    for field, label in LINK_KEYS:
        value = getattr(txn, field)
        if not value:
            continue
        rows = Transaction.objects.filter(**{field: value}).exclude(account_id=txn.account_id)
        if field == "merchant_id":
            rows = rows.filter(is_fraud=True)
        for account_id, is_fraud in rows.values_list("account_id", "is_fraud")[:LINKS_PER_KEY]:
            shared.setdefault(account_id, set()).add(f"{label} {value if field != 'email_hash' else value[:12]}")
            if is_fraud:
                fraud.add(account_id)
    if not shared:
        return []
    fraud |= set(Transaction.objects.filter(account_id__in=list(shared), is_fraud=True)
                 .values_list("account_id", flat=True).distinct())
    names = dict(Transaction.objects.filter(account_id__in=list(shared)).values_list("account_id", "account__account_id")
                 .distinct())
    cards = [{"account_id": names[pk], "shares": sorted(kinds), "confirmed_fraud": pk in fraud}
             for pk, kinds in shared.items()]
    cards.sort(key=lambda c: (not c["confirmed_fraud"], -len(c["shares"]), c["account_id"]))
    return cards[:LINKED_SHOWN]
