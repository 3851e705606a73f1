"""The outcome_similarity analyst: past decided look-alikes, confirmed fraud raising the
likelihood and cleared ones lowering it, with the knowledge patterns behind them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.llm.offline_registry import offline_analyst
from casework.fraud.agents.inputs import (
    normalise_outcome,
)
from casework.fraud.agents.offline.rules import (
    SIGNATURE,
    _num,
    _plural,
)

_LEVEL_PRIOR = {"critical": 0.85, "high": 0.7, "medium": 0.45, "low": 0.2}


def _similar_evidence(count: int) -> float:
    """Likelihood implied by the number of similar confirmed-fraud cases."""
    if count <= 0:
        return 0.0
    return min(0.9, 0.45 + 0.1 * count)


def _cleared_weight(cleared: int, confirmed: int) -> float:
    """How much similar cleared cases lower the likelihood: 25% for one, up to 60%, less when
    similar confirmed cases outnumber them."""
    if cleared <= 0:
        return 0.0
    share = cleared / (cleared + confirmed)
    return round(min(0.6, 0.25 + 0.1 * (cleared - 1)) * share, 2)


def _words(text: Any) -> set[str]:
    return {w for w in "".join(c.lower() if c.isalnum() else " " for c in str(text or "")).split() if len(w) > 3}


@offline_analyst("outcome_similarity")
def outcome_similarity_analyst(data: Mapping[str, Any]) -> dict[str, Any]:
    """Blend the upstream probability with how many similar cases were confirmed as fraud."""
    probability = _num(data, "fraud_probability")
    count = max(0, int(_num(data, "similar_confirmed_cases_count_from_system") or 0))
    level = str(data.get("risk_level") or "").lower()
    parts: list[str] = []

    evidence = _similar_evidence(count)
    if probability is not None and count:
        likelihood = 0.6 * probability + 0.4 * evidence
        parts.append(f"0.6 x upstream fraud probability {probability:.2f} + 0.4 x {evidence:.2f} "
                     f"implied by {_plural(count, 'similar confirmed fraud case')}")
    elif probability is not None:
        likelihood = probability
        parts.append(f"upstream fraud probability {probability:.2f}; no similar confirmed fraud case on record")
    elif count:
        likelihood = evidence
        parts.append(f"{_plural(count, 'similar confirmed fraud case')} "
                     f"{'implies' if count == 1 else 'imply'} {evidence:.2f}; no upstream probability")
    elif level in _LEVEL_PRIOR:
        likelihood = _LEVEL_PRIOR[level]
        parts.append(f"only the upstream risk level '{level}' is known: prior {likelihood:.2f}")
    else:
        likelihood = 0.1
        parts.append("no upstream probability and no similar confirmed case: base rate 0.10, little evidence")

    cleared_count = max(0, int(_num(data, "similar_cleared_cases_count_from_system") or 0))
    cleared = [c for c in data.get("similar_cleared_cases") or [] if isinstance(c, Mapping)]
    if cleared_count:
        # Past decisions that this pattern was not fraud count against it, as confirmed ones count for it.
        weight = _cleared_weight(cleared_count, count)
        before = likelihood
        likelihood = likelihood * (1 - weight)
        named = ", ".join(f"{c.get('reference')} ({c.get('outcome_label') or c.get('outcome')} by "
                          f"{c.get('decided_by')})" for c in cleared[:3])
        parts.append(f"lowered from {before:.2f} by {int(round(weight * 100))}% because "
                     f"{_plural(cleared_count, 'similar past case')} {'was' if cleared_count == 1 else 'were'} "
                     f"cleared by a person: {named}")

    cases = [c for c in data.get("similar_cases") or [] if isinstance(c, Mapping)]
    linked = [c for c in cases if c.get("linked_as")]
    if linked:
        # A person tied these cases to this one (casework.entities); they count above, at any distance.
        parts.append("linked by a person and confirmed as fraud: " + ", ".join(
            f"{c.get('reference')} ({c.get('linked_as')})" for c in linked[:3]))
    if cases:
        names = [str(c.get("account_id") or c.get("id") or "?") for c in cases[:3]]
        parts.append(f"nearest confirmed cases: {', '.join(names)}")

    patterns = [p for p in data.get("knowledge_patterns") or [] if isinstance(p, Mapping)]
    if patterns:
        target = _words(data.get("one_line_explanation")) | _words(" ".join(
            str(c.get("behavioral_pattern") or "") for c in cases))
        best = max(patterns, key=lambda p: (len(target & (_words(p.get("behavioral_pattern"))
                                                           | _words(p.get("one_sentence_description")))),
                                            normalise_outcome(p.get("final_outcome")) == "Confirmed Fraud"))
        description = best.get("one_sentence_description") or best.get("behavioral_pattern")
        if description:
            parts.append(f"closest captured pattern: \"{str(description)[:200]}\"")

    likelihood = round(min(1.0, max(0.0, likelihood)), 2)
    explanation = f"Fraud likelihood {likelihood:.2f}: {'; '.join(parts)}. {SIGNATURE}"
    return {
        "fraud_likelihood": likelihood,
        "similar_confirmed_cases_count": count,
        "explanation": explanation,
    }


# -- orchestrator -------------------------------------------------------------------------
