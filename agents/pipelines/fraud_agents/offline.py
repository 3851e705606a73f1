"""Offline analysts: transparent, weighted rules in place of the seven fraud LLM agents.

Each analyst is a deterministic function of the same input dict its LLM agent is shown and
returns a dict valid against that agent's output model. Every rule that fires adds a named
weight and the explanation lists them, so an investigator can check the arithmetic.

Calibration principles (tuned on tests/fraud/data/tuning_alerts.csv, measured on the separate
labelled_alerts.csv):
- A specialist may be high on its own dimension, but the orchestrator needs corroboration:
  one elevated dimension alone never makes a case high risk, with one exception: the
  transaction score, whose high band is only reachable by combining independent money signals
  (fast cycling AND deposits far above declared income).
- Signals that honest customers show on their own (travel to many countries, VPN use, a
  shared household device and IP, a new account, large deposits in line with income) carry
  small weights; their combinations carry the larger ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.llm.offline_registry import offline_analyst
from agents.pipelines.fraud_agents.inputs import (
    SPECIALIST_IDS,
    build_geo_input,
    build_identity_input,
    build_network_input,
    build_orchestrator_input,
    build_outcome_similarity_input,
    build_transaction_input,
    normalise_outcome,
)
from casework.fraud import thresholds as T
from casework.fraud.thresholds import GEO_BANDS, IDENTITY_BANDS, NETWORK_CLUSTER_BANDS, TRANSACTION_BANDS, graded, ramp

SIGNATURE = "Produced by the offline rule-based analyst (deterministic rules, no language model)."

# The bands come from the one threshold table the scorer and the case page use too.
TRANSACTION_HIGH, TRANSACTION_MEDIUM = TRANSACTION_BANDS
IDENTITY_HIGH, IDENTITY_MEDIUM = IDENTITY_BANDS
GEO_HIGH, GEO_MEDIUM = GEO_BANDS
NETWORK_HIGH_CLUSTER, NETWORK_MEDIUM_CLUSTER = NETWORK_CLUSTER_BANDS
LEVEL_POINTS = {"low": 0, "medium": 1, "high": 2}


class _Rules:
    """Collects fired rules as (weight, description) and totals them, capped at 1."""

    def __init__(self) -> None:
        self.fired: list[tuple[float, str]] = []
        self.notes: list[str] = []

    def add(self, weight: float, description: str) -> None:
        self.fired.append((weight, description))

    @property
    def score(self) -> float:
        return round(min(1.0, sum(weight for weight, _ in self.fired)), 2)

    def breakdown(self) -> str:
        if not self.fired:
            return "no rule fired"
        return "; ".join(f"{text} (+{weight:.2f})" for weight, text in self.fired)


def _num(data: Mapping[str, Any], key: str) -> float | None:
    value = data.get(key)
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _level(score: float, high: float, medium: float) -> str:
    return "high" if score >= high else "medium" if score >= medium else "low"


def _fmt(value: float, digits: int = 1) -> str:
    text = f"{value:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _plural(count: float, singular: str, plural: str | None = None) -> str:
    """'1 case', '3 cases': the count and the noun agreeing with it."""
    number = _fmt(count) if isinstance(count, float) else str(count)
    return f"{number} {singular if count == 1 else plural or singular + 's'}"


def _upstream(data: Mapping[str, Any]) -> str:
    """The upstream model's scores are reported for comparison, never added to the rule score."""
    parts = []
    if (p := _num(data, "fraud_probability")) is not None:
        parts.append(f"fraud probability {p:.2f}")
    if (a := _num(data, "anomaly_score")) is not None:
        parts.append(f"anomaly score {a:.2f}")
    return f" Upstream model, for comparison only: {', '.join(parts)}." if parts else ""


# -- transaction --------------------------------------------------------------------------


@offline_analyst("transaction")
def transaction_analyst(data: Mapping[str, Any]) -> dict[str, Any]:
    """Deposit-withdraw cycling, deposits against declared income, pass-through, layering."""
    rules = _Rules()
    income = _num(data, "declared_income_annual")
    deposits = _num(data, "deposits_total")
    withdrawals = _num(data, "withdrawals_total")
    cycle = _num(data, "deposit_withdraw_cycle_days_avg")
    ratio = _num(data, "deposits_vs_income_ratio")
    if ratio is None and deposits is not None and income:
        ratio = deposits / income
        rules.notes.append(f"deposits against income worked out from the totals: {ratio:.2f} times")

    # Graded (casework/fraud/thresholds.py): each rule weighs in proportion to how far past
    # its start the value is; the names say which band the value reached.
    if cycle is None:
        rules.notes.append("deposit-withdraw cycle unknown")
    elif (weight := graded(cycle, T.CYCLE_DAYS)) > 0:
        name = ("rapid deposit-withdraw cycling" if cycle <= 2 else "fast deposit-withdraw cycling" if cycle <= 7
                else "short deposit-withdraw cycle")
        band = "2 days or less" if cycle <= 2 else "4 days or less" if cycle <= 4 else "7 days or less" \
            if cycle <= 7 else "10 days or less" if cycle <= 10 else "under 12 days"
        rules.add(weight, f"{name}: {_plural(cycle, 'day')} on average ({band})")

    if ratio is None:
        rules.notes.append("deposits against declared income unknown")
    elif (weight := graded(ratio, T.DEPOSITS_VS_INCOME)) > 0:
        band = "5 times or more" if ratio >= 5 else "3 times or more" if ratio >= 3 else "twice or more" \
            if ratio >= 2 else "1.6 times or more" if ratio >= 1.6 else "over 1.3 times"
        rules.add(weight, f"deposits {_fmt(ratio)} times the declared annual income ({band})")

    # Spending most of what comes in is normal; moving it straight out again is not.
    if deposits and withdrawals is not None and cycle is not None and cycle < 12:
        share = withdrawals / deposits
        weight = graded(share, T.PASS_THROUGH) * ramp(cycle, 12, 10)
        if weight > 0:
            rules.add(weight, f"pass-through: {share:.0%} of deposits withdrawn again within the cycle "
                              f"({'90% or more' if share >= 0.9 else '80% or more' if share >= 0.8 else 'over 70%'})")

    if cycle is not None and ratio is not None:
        layering = min(ramp(cycle, *T.LAYERING["cycle_days"]), ramp(ratio, *T.LAYERING["deposits_vs_income"]))
        if layering > 0:
            rules.add(T.LAYERING["weight"] * layering,
                      "layering: money far beyond declared income cycled out within a week" if layering >= 1
                      else "emerging layering: money above declared income cycled out within days")

    score = rules.score
    band = _level(score, TRANSACTION_HIGH, TRANSACTION_MEDIUM)
    facts = []
    if income is not None:
        facts.append(f"declared income {_fmt(income, 0)}")
    if deposits is not None:
        facts.append(f"deposits {_fmt(deposits, 0)} in {_plural(int(data.get('deposits_count') or 0), 'transaction')}")
    if withdrawals is not None:
        facts.append(f"withdrawals {_fmt(withdrawals, 0)} in "
                     f"{_plural(int(data.get('withdrawals_count') or 0), 'transaction')}")
    explanation = (
        f"Anomaly score {score:.2f} ({band}) from the weighted rules: {rules.breakdown()}. "
        f"Figures: {', '.join(facts) or 'none given'}."
        + (f" Notes: {'; '.join(rules.notes)}." if rules.notes else "")
        + _upstream(data)
        + f" A score of {TRANSACTION_HIGH} or more is high, {TRANSACTION_MEDIUM} or more medium. {SIGNATURE}"
    )
    return {
        "anomaly_score": score,
        "detected_patterns": [text for _, text in rules.fired],
        "short_explanation": explanation,
    }


# -- identity -----------------------------------------------------------------------------


@offline_analyst("identity")
def identity_analyst(data: Mapping[str, Any]) -> dict[str, Any]:
    """KYC face match and account age; a weak match on a new account is the synthetic-identity pattern."""
    rules = _Rules()
    face = _num(data, "kyc_face_match_score")
    age = _num(data, "account_age_days")
    reassuring: list[str] = []

    if face is None:
        rules.notes.append("no KYC face match score")
    elif face >= 0.80:
        reassuring.append(f"good KYC face match {face:.2f} (0.80 or more)")
        if (weight := graded(face, T.FACE_MATCH)) > 0:
            rules.add(weight, f"face match {face:.2f} just above the 0.80 a genuine customer usually reaches")
    else:
        name = ("very poor" if face < 0.40 else "poor" if face < 0.55 else "borderline" if face < 0.70
                else "slightly weak")
        band = ("below 0.40" if face < 0.40 else "below 0.55" if face < 0.55 else "below 0.70" if face < 0.70
                else "below 0.80")
        rules.add(graded(face, T.FACE_MATCH), f"{name} KYC face match {face:.2f} ({band})")

    if age is None:
        rules.notes.append("account age unknown")
    elif (weight := graded(age, T.ACCOUNT_AGE_DAYS)) > 0:
        name, band = (("brand-new account", "under 14 days") if age < 14 else ("new account", "under 45 days")
                      if age < 45 else ("young account", "under 90 days") if age < 90
                      else ("recent account", "under 120 days"))
        rules.add(weight, f"{name}: {_plural(int(age), 'day')} old ({band})")
    if age is not None and age >= 90:
        reassuring.append(f"established account: {_plural(int(age), 'day')} old")

    if face is not None and age is not None:
        synthetic = min(ramp(face, *T.SYNTHETIC_IDENTITY["face_match"]),
                        ramp(age, *T.SYNTHETIC_IDENTITY["account_age_days"]))
        if synthetic > 0:
            rules.add(T.SYNTHETIC_IDENTITY["weight"] * synthetic,
                      "weak face match on a new account (synthetic-identity pattern)")

    score = rules.score
    risk = _level(score, IDENTITY_HIGH, IDENTITY_MEDIUM)
    explanation = (
        f"Identity risk {risk} (rule score {score:.2f}; {IDENTITY_HIGH} or more is high, {IDENTITY_MEDIUM} or more "
        f"medium) "
        f"from: {rules.breakdown()}."
        + (f" Reassuring: {'; '.join(reassuring)}." if reassuring else "")
        + (f" Notes: {'; '.join(rules.notes)}." if rules.notes else "")
        + (" A new account with a good face match is not suspicious by itself."
           if risk == "low" and age is not None and age < 45 and face is not None and face >= 0.80 else "")
        + _upstream(data)
        + f" {SIGNATURE}"
    )
    return {
        "identity_risk": risk,
        "indicators": [text for _, text in rules.fired] + [f"reassuring: {text}" for text in reassuring],
        "explanation": explanation,
    }


# -- geo ----------------------------------------------------------------------------------


@offline_analyst("geo")
def geo_analyst(data: Mapping[str, Any]) -> dict[str, Any]:
    """VPN use and countries of access; masked access from many countries is VPN hopping."""
    rules = _Rules()
    vpn = _num(data, "vpn_usage_pct")
    countries = _num(data, "countries_accessed_count")
    reassuring: list[str] = []

    if vpn is None:
        rules.notes.append("VPN usage unknown")
    elif vpn < 10:
        reassuring.append(f"little or no VPN use: {vpn:.0f}% of sessions")
    if vpn is not None and (weight := graded(vpn, T.VPN_PCT)) > 0:
        name, band = (("heavy", "60% or more") if vpn >= 60 else ("frequent", "30% or more") if vpn >= 30
                      else ("occasional", "10% or more") if vpn >= 10 else ("slight", "over 5%"))
        rules.add(weight, f"{name} VPN use: {vpn:.0f}% of sessions ({band})")

    if countries is None:
        rules.notes.append("countries of access unknown")
    elif countries < 3:
        reassuring.append(f"accessed from {countries:.0f} countr{'y' if countries == 1 else 'ies'}")
    if countries is not None and (weight := graded(countries, T.COUNTRIES)) > 0:
        band = "10 or more" if countries >= 10 else "5 or more" if countries >= 5 else "3 or more"
        rules.add(weight, f"accessed from {countries:.0f} countries ({band})")

    if vpn is not None and countries is not None:
        hopping = min(ramp(vpn, *T.VPN_HOPPING["vpn_pct"]), ramp(countries, *T.VPN_HOPPING["countries"]))
        if hopping > 0:
            rules.add(T.VPN_HOPPING["weight"] * hopping, "VPN hopping: masked access spread over many countries")

    score = rules.score
    risk = _level(score, GEO_HIGH, GEO_MEDIUM)
    context = ""
    if risk != "high" and countries is not None and countries >= 5 and (vpn or 0) < 30:
        context = " Many countries without heavy VPN use looks like travel, not hiding."
    elif risk != "high" and vpn is not None and vpn >= 30 and (countries or 0) < 5:
        context = " Heavy VPN use from few countries is common among privacy-minded customers; needs corroboration."
    explanation = (
        f"Geo risk {risk} (rule score {score:.2f}; {GEO_HIGH} or more is high, {GEO_MEDIUM} or more medium) "
        f"from: {rules.breakdown()}."
        + (f" Reassuring: {'; '.join(reassuring)}." if reassuring else "")
        + (f" Notes: {'; '.join(rules.notes)}." if rules.notes else "")
        + context + _upstream(data) + f" {SIGNATURE}"
    )
    return {
        "geo_risk": risk,
        "indicators": [text for _, text in rules.fired] + [f"reassuring: {text}" for text in reassuring],
        "explanation": explanation,
    }


# -- network ------------------------------------------------------------------------------


@offline_analyst("network")
def network_analyst(data: Mapping[str, Any]) -> dict[str, Any]:
    """Accounts sharing a device or an IP address, and how many of them are confirmed fraud."""
    device = int(_num(data, "device_shared_count") or 0)
    ip = int(_num(data, "ip_shared_count") or 0)
    links_known = data.get("known_fraud_links_from_system") is not None
    links = int(_num(data, "known_fraud_links_from_system") or 0)
    # The two sets of accounts may overlap (a household shares both), so the larger is the
    # conservative estimate of how many distinct accounts are linked.
    cluster = max(device, ip)

    signals = []
    if device:
        signals.append(f"device shared with {device} other account{'s' if device != 1 else ''}")
    if ip:
        signals.append(f"IP address shared with {ip} other account{'s' if ip != 1 else ''}")
    if links:
        signals.append(f"{links} linked account{'s' if links != 1 else ''} confirmed as fraud")

    if cluster == 0:
        reading = "No other account shares a device or IP address with this one."
    elif device >= 5:
        reading = (f"{device} accounts operated from the same device (5 or more): the mule-ring pattern, "
                   "where one person runs many accounts.")
    elif device >= 3:
        reading = (f"A small cluster on one device ({device} accounts, 3 or more): could be a small ring or a "
                   "large household; it needs corroboration (VPN use, fast cycling) before it means fraud.")
    elif ip >= 6 and device <= 1:
        reading = (f"Many accounts on one IP address ({ip}) but not on the device: typical of a shared "
                   "network (campus, office, mobile carrier), weak evidence on its own.")
    else:
        shared = " and ".join(part for part in (
            _plural(device, "account") + " on the device" if device else "",
            _plural(ip, "account") + " on the IP address" if ip else "") if part)
        reading = (f"Few accounts share this one's device or network ({shared}): consistent with a household "
                   "or a shared connection; not suspicious on its own.")
    link_text = (f" The system reports {_plural(links, 'confirmed-fraud account')} among them, which is strong "
                 "evidence."
                 if links else
                 " The system reports no confirmed-fraud account among them." if links_known else
                 " The system gave no count of confirmed-fraud links, so 0 is reported.")
    explanation = (
        f"Cluster of {cluster} linked accounts (the larger of {device} sharing the device and {ip} sharing "
        f"the IP address). {reading}{link_text}{_upstream(data)} {SIGNATURE}"
    )
    return {
        "cluster_size": cluster,
        "known_fraud_links": links,
        "shared_signals": signals,
        "explanation": explanation,
    }


# -- outcome similarity -------------------------------------------------------------------

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

_FRAUD_PATTERNS = {
    "transaction": "deposit-withdraw cycling",
    "network": "mule network sharing devices",
    "identity": "synthetic identity (weak face match on a new account)",
    "geo": "VPN hopping",
}
_LEGIT_PATTERNS = {
    "transaction": "income-consistent money movement",
    "network": "household or shared network",
    "identity": "new customer",
    "geo": "travel or privacy VPN use",
}
_KEYWORDS = {
    "transaction": ("cycl", "deposit", "withdraw", "income", "layering", "pass-through"),
    "network": ("device", "shared", "cluster", "mule", "ip "),
    "identity": ("face", "kyc", "identity", "new account", "days old", "synthetic"),
    "geo": ("vpn", "countr", "geo", "location"),
}


def _clip_words(text: str, limit: int) -> str:
    """The text cut at a word boundary within limit characters, with an ellipsis if cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text.rstrip(".")
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:.") + "…"


@offline_analyst("knowledge_capture")
def knowledge_capture_analyst(data: Mapping[str, Any]) -> dict[str, Any]:
    """Outcome, reason and the strongest signals, condensed into a reusable pattern."""
    outcome = normalise_outcome(data.get("outcome")) or "Unknown outcome"
    reason = str(data.get("reason") or "").strip()
    findings = data.get("agent_findings") if isinstance(data.get("agent_findings"), Mapping) else {}
    dims = _dimension_levels(findings) if findings else {}
    elevated = sorted(((d, v) for d, v in dims.items() if v[0] != "low"), key=lambda i: -LEVEL_POINTS[i[1][0]])

    signals: list[str] = []
    for dim, (level, headline) in elevated:
        signals.append(f"{dim} {level}: {headline}")
    for factor in data.get("risk_factors") or []:
        signals.append(str(factor))
    if not signals and data.get("one_line_explanation"):
        signals.append(str(data["one_line_explanation"]))
    signals = list(dict.fromkeys(s[:300] for s in signals))[:6]

    dims_named = [d for d, _ in elevated]
    if not dims_named:  # no findings: read the dimensions off the upstream risk factors
        text = " ".join(signals).lower()
        dims_named = [d for d, words in _KEYWORDS.items() if any(w in text for w in words)]
    if outcome == "Confirmed Fraud":
        pattern = " + ".join(_FRAUD_PATTERNS[d] for d in dims_named) or "fraud without a recorded signal pattern"
    elif outcome in ("Marked Legit", "False Positive"):
        pattern = ("legitimate: " + " + ".join(_LEGIT_PATTERNS[d] for d in dims_named)
                   if dims_named else "legitimate activity, no elevated signal")
    else:  # an outcome we do not know: record the signals without calling them fraud or legit
        pattern = "undetermined: " + (", ".join(dims_named) + " signals" if dims_named else "no elevated signal")
    # One readable sentence: the pattern, where it was strongest, and the investigator's reason
    # (the signals' full text is in key_signals).
    strongest = ", ".join(f"{d} ({level})" for d, (level, _) in elevated[:3])
    sentence = f"{outcome} on {data.get('account_id') or 'an account'}: {pattern}"
    if strongest:
        sentence += f", strongest in {strongest}"
    if reason:
        sentence += f". Investigator: {_clip_words(reason, 200)}"
    if len(sentence) > 490:  # the schema's limit is 500
        sentence = _clip_words(sentence, 489)
    return {
        "key_signals": signals,
        "behavioral_pattern": pattern[:300],
        "final_outcome": outcome,
        "one_sentence_description": sentence.rstrip(".") + ".",
    }


# -- the offline pipeline, for evaluation and demos ---------------------------------------

SPECIALIST_ANALYSTS = {
    "transaction": transaction_analyst,
    "identity": identity_analyst,
    "geo": geo_analyst,
    "network": network_analyst,
    "outcome_similarity": outcome_similarity_analyst,
}


def run_offline_investigation(
    alert: Mapping[str, Any],
    *,
    similar_confirmed_cases_count_from_system: int = 0,
    known_fraud_links_from_system: int | None = None,
    similar_cases: list[Mapping[str, Any]] | None = None,
    knowledge_patterns: list[Mapping[str, Any]] | None = None,
    unavailable: tuple[str, ...] = (),
) -> dict[str, dict]:
    """The alert_creation pipeline with the analysts called directly, no runtime and no Django:
    the five specialists, then the orchestrator on their merged findings. `unavailable` names
    specialists to treat as failed."""
    inputs = {
        "transaction": build_transaction_input(alert),
        "identity": build_identity_input(alert),
        "geo": build_geo_input(alert),
        "network": build_network_input(alert, known_fraud_links_from_system),
        "outcome_similarity": build_outcome_similarity_input(
            alert, similar_confirmed_cases_count_from_system, similar_cases, knowledge_patterns),
    }
    results: dict[str, dict] = {}
    for agent_id, analyst in SPECIALIST_ANALYSTS.items():
        if agent_id in unavailable:
            results[agent_id] = {"_error": "unavailable"}
        else:
            results[agent_id] = analyst(inputs[agent_id])
    results["orchestrator"] = orchestrator_analyst(build_orchestrator_input(results))
    return results
