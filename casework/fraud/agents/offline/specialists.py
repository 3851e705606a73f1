"""The four dimension analysts: transaction, identity, geo and network. Each scores graded
evidence from its agent's input and explains every rule that fired."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.llm.offline_registry import offline_analyst
from casework.fraud import thresholds as T
from casework.fraud.agents.offline.rules import (
    GEO_HIGH,
    GEO_MEDIUM,
    IDENTITY_HIGH,
    IDENTITY_MEDIUM,
    SIGNATURE,
    TRANSACTION_HIGH,
    TRANSACTION_MEDIUM,
    _fmt,
    _level,
    _num,
    _plural,
    _Rules,
    _upstream,
)
from casework.fraud.thresholds import graded, ramp


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
