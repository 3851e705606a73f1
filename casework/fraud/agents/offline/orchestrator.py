"""The orchestrator analyst: combines the specialists' levels, asking for corroboration across
dimensions before a case is high risk."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.llm.offline_registry import offline_analyst
from casework.fraud import thresholds as T
from casework.fraud.agents.inputs import (
    SPECIALIST_IDS,
)
from casework.fraud.agents.offline.rules import (
    LEVEL_POINTS,
    NETWORK_HIGH_CLUSTER,
    NETWORK_MEDIUM_CLUSTER,
    SIGNATURE,
    TRANSACTION_HIGH,
    TRANSACTION_MEDIUM,
    _level,
    _num,
    _plural,
)
from casework.fraud.thresholds import TRANSACTION_BANDS, graded

_NAMES = {"transaction": "Transaction", "identity": "Identity", "geo": "Geo", "network": "Network",
          "outcome_similarity": "Outcome similarity"}


def _dimension_points(data: Mapping[str, Any], dims: dict[str, tuple[str, str]]) -> dict[str, float]:
    """Graded points per dimension: how far past its thresholds the finding is (a transaction
    anomaly of 0.55 is nearly high, not merely medium; a cluster of 5 nearly a ring), 2 at most.
    Identity and geo report levels only: 2 high, 1 medium, and a low one whose rules still
    found something is a weak signal (T.WEAK_SIGNAL_POINTS)."""
    points: dict[str, float] = {}
    tx = data.get("transaction")
    if "transaction" in dims:
        score = _num(tx, "anomaly_score") or 0.0
        high, medium = TRANSACTION_BANDS
        points["transaction"] = graded(score, ((medium / 2, 0.0), (medium, 1.0), (high, 2.0)))
    for dim in ("identity", "geo"):
        if dim in dims:
            level = dims[dim][0]
            out = data[dim]
            weak = any(not str(i).lower().startswith("reassuring") for i in out.get("indicators") or [])
            points[dim] = float(LEVEL_POINTS[level]) or (T.WEAK_SIGNAL_POINTS if weak else 0.0)
    if "network" in dims:
        net = data["network"]
        cluster = int(_num(net, "cluster_size") or 0)
        links = int(_num(net, "known_fraud_links") or 0)
        signals = [str(s) for s in net.get("shared_signals") or []]
        value = 2.0 if links else graded(cluster, T.NETWORK_CLUSTER)
        if not links and not any("device" in s.lower() for s in signals):
            value /= 2  # sharing only an IP address (campus, office, carrier NAT) is weaker
        points["network"] = value
    return points


def _dimension_levels(data: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """(level, headline) for each independent dimension that answered."""
    dims: dict[str, tuple[str, str]] = {}
    tx = data.get("transaction")
    if isinstance(tx, Mapping) and _num(tx, "anomaly_score") is not None:
        score = _num(tx, "anomaly_score") or 0.0
        patterns = [str(p) for p in tx.get("detected_patterns") or []][:2]
        dims["transaction"] = (_level(score, TRANSACTION_HIGH, TRANSACTION_MEDIUM),
                               f"anomaly {score:.2f}" + (f": {'; '.join(patterns)}" if patterns else ""))
    for dim, key in (("identity", "identity_risk"), ("geo", "geo_risk")):
        out = data.get(dim)
        if isinstance(out, Mapping) and str(out.get(key) or "").lower() in LEVEL_POINTS:
            level = str(out[key]).lower()
            indicators = [str(i) for i in out.get("indicators") or []
                          if not str(i).lower().startswith("reassuring")][:2]
            dims[dim] = (level, "; ".join(indicators) or f"{dim} risk {level}")
    net = data.get("network")
    if isinstance(net, Mapping) and _num(net, "cluster_size") is not None:
        cluster = int(_num(net, "cluster_size") or 0)
        links = int(_num(net, "known_fraud_links") or 0)
        signals = [str(s) for s in net.get("shared_signals") or []]
        level = ("high" if links or cluster >= NETWORK_HIGH_CLUSTER
                 else "medium" if cluster >= NETWORK_MEDIUM_CLUSTER else "low")
        # Sharing only an IP address (campus, office, carrier NAT) is weaker than sharing a device.
        if not links and level != "low" and not any("device" in s.lower() for s in signals):
            level = "medium" if level == "high" else "low"
        dims["network"] = (level, "; ".join(signals[:3]) or f"cluster of {cluster}")
    return dims


@offline_analyst("orchestrator")
def orchestrator_analyst(data: Mapping[str, Any]) -> dict[str, Any]:
    """Points for each elevated dimension, bonuses for corroboration, bands for the verdict.

    1. Each of transaction, identity, geo and network scores 2 points when high, 1 when medium.
    2. +1 when two or more of them are elevated (independent corroboration).
    3. +1 when the transaction score is in its high band (itself a combination of money signals).
    4. +1 when the system knows of confirmed-fraud accounts in the network.
    5. +1 when outcome similarity puts fraud likelihood at >= 0.70 and some dimension is elevated.
    6. >= 6 points critical, >= 3 high, 2 medium, else low. Confidence falls with every
       specialist that did not answer.
    """
    dims = _dimension_levels(data)
    listed = data.get("unavailable_specialists") or []
    unavailable = [s for s in SPECIALIST_IDS if s in listed or not isinstance(data.get(s), Mapping)]
    similarity = data.get("outcome_similarity") if isinstance(data.get("outcome_similarity"), Mapping) else None
    likelihood = _num(similarity, "fraud_likelihood") if similarity else None
    links = int(_num(data["network"], "known_fraud_links") or 0) if isinstance(data.get("network"), Mapping) else 0

    elevated = {d: v for d, v in dims.items() if v[0] != "low"}
    graded_points = _dimension_points(data, dims)
    points = sum(graded_points.values())
    bonuses: list[str] = []
    if len(elevated) >= 2:
        points += 1
        bonuses.append(f"Corroborated across {len(elevated)} independent dimensions "
                       f"({', '.join(_NAMES[d].lower() for d in elevated)})")

    if dims.get("transaction", ("low",))[0] == "high":
        points += 1
        bonuses.append("Transaction anomaly in its high band combines several money signals")
    if links:
        points += 1
        bonuses.append(f"Network: {_plural(links, 'linked account')} already confirmed as fraud")
    if likelihood is not None and likelihood >= 0.7 and elevated:
        points += 1
        bonuses.append(f"Outcome similarity: fraud likelihood {likelihood:.2f} (0.70 or more)")

    if not dims:
        risk = "medium"  # nothing to go on: a person has to look, but not urgently
    elif points >= 6:
        risk = "critical"
    elif points >= 3:
        risk = "high"
    elif points >= 2:
        risk = "medium"
    else:
        risk = "low"

    base = {"critical": min(0.95, 0.85 + 0.02 * (points - 6)), "high": min(0.85, 0.65 + 0.05 * (points - 3)),
            "medium": 0.55, "low": 0.8 if points == 0 else 0.65}[risk]
    coverage = (len(SPECIALIST_IDS) - len(unavailable)) / len(SPECIALIST_IDS)
    confidence = round(0.1 if not dims else base * (0.5 + 0.5 * coverage), 2)

    ranked = sorted(elevated.items(), key=lambda item: -LEVEL_POINTS[item[1][0]])
    key_drivers = [f"{_NAMES[d]} ({level}): {headline}" for d, (level, headline) in ranked] + bonuses
    if not key_drivers:
        key_drivers = (["No specialist findings were available"] if not dims
                       else ["No specialist found an elevated signal"])

    quiet = [f"{_NAMES[d].lower()} {level}" for d, (level, _) in dims.items() if level == "low"]
    shares = ", ".join(f"{_NAMES[d].lower()} {p:.1f}" for d, p in graded_points.items())
    summary = [f"{risk.upper()} risk, confidence {confidence:.2f}, {_plural(round(points, 1), 'point')}"
               + (f" ({shares})." if shares else ".")]
    if elevated:
        summary.append("Elevated: " + "; ".join(f"{_NAMES[d].lower()} {lv} ({h})" for d, (lv, h) in ranked) + ".")
    if len(elevated) == 1 and risk in ("low", "medium"):
        summary.append("Only one dimension is elevated, so it is not treated as high risk without corroboration.")
    if quiet:
        summary.append("Speaking against: " + ", ".join(quiet) + ".")
    if likelihood is not None:
        summary.append(f"Outcome similarity: fraud likelihood {likelihood:.2f}, "
                       f"{_plural(int(_num(similarity, 'similar_confirmed_cases_count') or 0), 'similar confirmed case')}.")
    if unavailable:
        summary.append(f"Unavailable: {', '.join(_NAMES[s].lower() for s in unavailable)}; "
                       "confidence reduced accordingly.")
    summary.append("Rules: each dimension 0-2 points, graded by how far past its thresholds it is (a low "
                   f"one with a finding {T.WEAK_SIGNAL_POINTS}, so weak signals in several dimensions add up); +1 "
                   "for corroboration across dimensions, for a high transaction band, for known fraud links and for "
                   f"a similarity likelihood of 0.70 or more; 6 points or more is critical, 3 or more high, 2 medium. "
                   f"{SIGNATURE}")
    return {
        "risk_level": risk,
        "confidence": confidence,
        "key_drivers": key_drivers[:8],
        "priority": risk,
        "investigation_summary": " ".join(summary),
    }


# -- knowledge capture --------------------------------------------------------------------
