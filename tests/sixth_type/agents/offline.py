"""The assessor, offline: covered within 24 months unless the defect says the customer caused it."""

from __future__ import annotations

from agents.llm.offline_registry import offline_analyst

CAUSED = ("drop", "dropped", "water", "spill")


@offline_analyst("warranty_assessor")
def assessor(data: dict, messages=None) -> dict:
    claim = data["claim"]
    months, defect = claim["months_since_purchase"], claim["defect"]
    if months > 24:
        return {"verdict": "not_covered", "reason": f"Bought {months} months ago, past the 24 months covered."}
    if any(word in defect.lower() for word in CAUSED):
        return {"verdict": "not_covered", "reason": f"The defect ({defect}) was caused by the customer."}
    return {"verdict": "covered", "reason": f"A defect ({defect}) {months} months after purchase, within 24 months."}
