"""What reasoning_tool, recommendation_tool and rule_draft_tool conclude from the evidence:
pure functions of the state, so they are the same on a resume and easy to test."""

from __future__ import annotations

from django.template.defaultfilters import pluralize

from casework.transactions.agents.state import assess
from casework.transactions.analysis import SMALL_TEST_AMOUNT
from casework.transactions.rules import Condition


def _patterns(state: dict) -> dict[str, dict]:
    return {p["type"]: p for p in (state.get("pattern_results") or {}).get("patterns", [])}


def _evidence(source: str, detail: str, ids=()) -> dict:
    return {"source": source, "detail": detail, "transaction_ids": list(ids)}


def _match(m: dict) -> str:
    """A similar investigation as evidence: how near, and whether a person linked it."""
    near = f"at distance {m['distance']}" if m.get("distance") is not None else "(no comparable features)"
    linked = f", linked to this case by a person as {m['linked_as']}" if m.get("linked_as") else ""
    return f"{m['reference']} {near}{linked}"


def fraud_elsewhere(context: dict) -> dict[str, str]:
    """Reference -> why, for the other cases decided as fraud that the context tool's
    related_cases ties to this one: linked by a person, or naming the same entity."""
    related = context.get("related_cases") or {}
    tied: dict[str, str] = {}
    for case in related.get("linked", []):
        if case.get("confirms_fraud"):
            tied[case["reference"]] = (f"{case['reference']} ({case['type'].replace('_', ' ')}) linked to this case "
                                       f"by a person, decided {case.get('decision')}")
    for entity in related.get("entities", []):
        for case in entity.get("other_cases", []):
            if case.get("confirms_fraud") and case["reference"] not in tied:
                tied[case["reference"]] = (f"{case['reference']} ({case['type'].replace('_', ' ')}) names the same "
                                           f"{entity['kind']} {entity['value']}, decided {case.get('decision')}")
    return tied


def reason(state: dict) -> dict:
    """Hypotheses with their evidence, most likely first, and the overall fraud likelihood."""
    patterns = _patterns(state)
    signals = (state.get("pattern_results") or {}).get("signals", {})
    similarity = state.get("similarity_results") or {}
    hypotheses = []

    def add(key, statement, likelihood, evidence, fraud=True):
        hypotheses.append({"key": key, "statement": statement, "likelihood": round(min(0.99, likelihood), 2),
                           "fraud": fraud, "evidence": evidence})

    amount, velocity = patterns.get("amount"), patterns.get("velocity")
    geography, mcc = patterns.get("geography"), patterns.get("mcc")
    if amount and "test charge" in amount["detail"]:
        add("card_testing", "Card testing: small test charges preceded a larger purchase.",
            0.55 + amount["score"] / 2, [_evidence("pattern_tool", amount["detail"], amount["transaction_ids"])])
    # Online with a new device, or an unusual amount online that the card's history does not
    # explain (its own web shop, from its own device, is not stolen card details).
    if signals.get("card_not_present") and (signals.get("new_device") or (
            amount and amount["flagged"] and not signals.get("in_character"))):
        evidence = [_evidence("pattern_tool", p["detail"], p["transaction_ids"]) for p in (amount, mcc)
                    if p and p["flagged"]]
        if signals.get("new_device"):
            evidence.append(_evidence("pattern_tool", "A device this card has not used before, card not present."))
        add("cnp_compromise", "Card details stolen and used online (card-not-present fraud).",
            0.35 + 0.2 * len(evidence), evidence)
    if geography and "impossible travel" in geography["detail"]:
        add("cloned_card", "A cloned card: the card was present in two countries too far apart in time.",
            0.8, [_evidence("pattern_tool", geography["detail"], geography["transaction_ids"])])
    if (signals.get("high_risk_mcc") or (mcc and mcc["flagged"])) and velocity and velocity["flagged"]:
        add("cash_out", "A cash-out burst through high-risk merchants.", 0.5 + velocity["score"] / 2,
            [_evidence("pattern_tool", velocity["detail"], velocity["transaction_ids"]),
             _evidence("pattern_tool", mcc["detail"])])
    elif velocity and velocity["flagged"]:
        add("velocity_abuse", "Unusual spending velocity on this card.", 0.3 + velocity["score"] / 2,
            [_evidence("pattern_tool", velocity["detail"], velocity["transaction_ids"])])
    explained = {h["key"] for h in hypotheses}
    if amount and amount["flagged"] and not explained & {"card_testing", "cnp_compromise", "cash_out"}:
        add("unusual_amount", "An unusually large purchase for this card: fraud, or a one-off the cardholder made.",
            0.3 + amount["score"] / 4, [_evidence("pattern_tool", amount["detail"], amount["transaction_ids"])])
    matches = similarity.get("matches", [])
    fraud_matches = [m for m in matches if m.get("outcome") == "fraud"]
    if fraud_matches:
        add("known_pattern", f"Resembles {len(fraud_matches)} past investigation{pluralize(len(fraud_matches))} "
                             "decided fraud.",
            0.3 + 0.6 * float(similarity.get("fraud_share") or 0),
            [_evidence("similarity_tool", _match(m)) for m in fraud_matches])
    ring = [c for c in (state.get("context") or {}).get("linked_cards", [])
            if c.get("confirmed_fraud") and any(not s.startswith("merchant") for s in c.get("shares", []))]
    if ring:
        add("fraud_ring", f"Part of a ring: shares a device, IP address or email with {len(ring)} card"
                          f"{pluralize(len(ring))} with confirmed fraud.", 0.45 + 0.15 * len(ring),
            [_evidence("context_tool", f"{c['account_id']} shares {', '.join(c['shares'])}") for c in ring[:5]])
    tied = fraud_elsewhere(state.get("context") or {})
    if tied:
        add("tied_to_fraud", f"Tied to {len(tied)} other case{pluralize(len(tied))} decided as fraud, linked by a "
                             "person or naming the same card, device, IP address or email.",
            0.45 + 0.15 * len(tied), [_evidence("context_tool", detail) for detail in tied.values()][:5])
    flagged = [p for p in patterns.values() if p["flagged"]]
    if signals.get("in_character") and [p["type"] for p in flagged] == ["amount"]:
        add("in_character", "A one-off the cardholder made: a merchant, a country and a device (or the card "
                            "itself) this card's history knows; only the amount is unusual.", 0.5,
            [_evidence("pattern_tool", amount["detail"], amount["transaction_ids"])], fraud=False)
    if signals.get("foreign") and len(flagged) <= 1 and not (geography and "impossible" in geography["detail"]):
        add("legitimate_travel", "The cardholder travelling: abroad, but otherwise in character.", 0.55,
            [_evidence("pattern_tool", geography["detail"] if geography else "abroad")], fraud=False)
    if not flagged:
        add("legitimate", "An ordinary purchase for this card: no pattern stands out.", 0.75,
            [_evidence("pattern_tool", p["detail"]) for p in patterns.values()][:2], fraud=False)
    hypotheses.sort(key=lambda h: -h["likelihood"])
    fraud = [h["likelihood"] for h in hypotheses if h["fraud"]]
    legit = [h["likelihood"] for h in hypotheses if not h["fraud"]]
    likelihood = max(fraud, default=0.0) * (1 - 0.5 * max(legit, default=0.0))
    return {"hypotheses": hypotheses, "fraud_likelihood": round(likelihood, 3),
            "summary": hypotheses[0]["statement"] if hypotheses else "No hypothesis: too little evidence."}


def recommend(state: dict) -> list[dict]:
    """Actions with reasons, most urgent first, from the severity the evidence gives now."""
    _, severity, _ = assess(state)
    reasoning = state.get("reasoning") or {}
    top = (reasoning.get("hypotheses") or [{}])[0]
    why = top.get("statement", "the pattern analysis")
    flagged = (state.get("pattern_results") or {}).get("flagged_transaction_ids", [])
    recs = []
    if severity in ("CRITICAL", "HIGH"):
        recs.append(("block_card", "Block the card and reissue it", f"{severity.title()} severity: {why}", 1))
        recs.append(("contact_cardholder", "Contact the cardholder to confirm the transaction",
                     "Confirms the fraud before a chargeback is raised.", 1))
        if flagged:
            recs.append(("review_related", f"Review the {len(flagged)} related transactions flagged in the history",
                         "The flagged patterns point at them; they may be part of the same fraud.", 2))
        recs.append(("raise_chargeback", "Raise a chargeback once the cardholder confirms",
                     "Recovers the amount from the merchant's acquirer.", 3))
    elif severity == "MEDIUM":
        recs.append(("step_up_auth", "Require step-up authentication on this card for 7 days",
                     f"Medium severity: {why}", 1))
        recs.append(("contact_cardholder", "Contact the cardholder to confirm the transaction",
                     "Cheap to ask, and settles the doubt.", 2))
    else:
        recs.append(("monitor", "No action; keep the card under normal monitoring",
                     f"Low severity: {why}", 3))
    return [{"action": a, "title": t, "reason": r, "priority": p} for a, t, r, p in recs]


def draft_rule(state: dict) -> dict:
    """A detection rule in the declarative form of casework.transactions.rules, built from the
    flagged patterns of this transaction (the back-test is added by the tool)."""
    txn = state["context"]["transaction"]
    patterns = _patterns(state)
    signals = (state.get("pattern_results") or {}).get("signals", {})
    top = ((state.get("reasoning") or {}).get("hypotheses") or [{"key": "suspicious"}])[0]
    conditions = []
    velocity = velocity_condition(patterns.get("velocity") or {}, top["key"])
    if velocity:
        conditions.append(velocity)
    if patterns.get("amount", {}).get("flagged") or not conditions:
        conditions.append({"field": "amount", "op": "gte", "value": max(50, int(txn["amount"] * 0.8) // 10 * 10)})
    if signals.get("high_risk_mcc") or patterns.get("mcc", {}).get("flagged"):
        conditions.append({"field": "mcc", "op": "in", "value": [txn["mcc"]]})
    if signals.get("foreign") and patterns.get("geography", {}).get("flagged"):
        conditions.append({"field": "foreign", "op": "eq", "value": True})
    if signals.get("card_not_present"):
        conditions.append({"field": "channel", "op": "in", "value": ["ecommerce", "moto"]})
    name = f"{top['key'].replace('_', ' ')}: MCC {txn['mcc']}, {txn['channel']}"
    return {"name": name[:120], "conditions": conditions,
            "description": f"Drafted from {state['transaction_id']}: {top.get('statement', '')}"}


def velocity_condition(velocity: dict, hypothesis: str) -> dict | None:
    """A velocity condition when the case's pattern is a burst on the card (the velocity pattern
    flagged): the card's transactions in the burst's window (10 minutes or an hour), from one
    fewer than this burst had (it would have fired on the burst's last but one); for card
    testing, only the small test charges are counted."""
    burst = velocity.get("burst")
    if not velocity.get("flagged") or not burst:
        return None
    if hypothesis == "card_testing" and burst["small"] >= 2:
        condition = {"agg": {"fn": "count", "by": "card", "window": burst["window"],
                             "where": [{"field": "amount", "op": "lte", "value": SMALL_TEST_AMOUNT}]},
                     "op": "gte", "value": max(2, burst["small"] - 1)}
    else:
        condition = {"agg": {"fn": "count", "by": "card", "window": burst["window"]}, "op": "gte",
                     "value": max(3, burst["count"] - 1)}
    return Condition.model_validate(condition).dump()  # the stored form, as the rules API keeps it
