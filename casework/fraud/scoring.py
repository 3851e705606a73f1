"""The built-in fraud scorer: transparent weighted rules over an alert's 13 features.

Upstream fraud models usually send `fraud_probability`, `anomaly_score`, `risk_level`,
`one_line_explanation` and `risk_factors` with each alert. When an alert arrives without
them, this scorer computes them, so every alert has a priority and an explanation a person
can check by hand. docs/fraud_scoring.md describes the same rules for investigators.

How a score is computed
-----------------------
1. Each *signal* turns one feature (or two that only mean something together) into a
   strength between 0 and 1 with a linear ramp: 0 below the point where it starts to be
   unusual, 1 at the point where it is clearly so.

   | signal                 | family   | weight | strength 0 at -> 1 at                           |
   |------------------------|----------|--------|-------------------------------------------------|
   | fast_cycling           | money    | 0.90   | cycle >= 14 days -> <= 2 days, times the share   |
   |                        |          |        | withdrawn (50% -> 90%), times repetition (1 -> 5 |
   |                        |          |        | deposits and withdrawals)                        |
   | deposits_beyond_income | money    | 0.70   | deposits 1.5x -> 4x declared annual income      |
   | weak_face_match        | identity | 0.80   | face match 0.80 -> 0.45                         |
   | new_account            | identity | 0.25   | 90 days old -> 7 days old                       |
   | heavy_vpn              | access   | 0.30   | 40% -> 90% of sessions through a VPN            |
   | many_countries         | access   | 0.30   | 4 -> 12 countries                               |
   | shared_device          | network  | 0.60   | 2 -> 6 other accounts on its devices            |
   | shared_ip              | network  | 0.35   | 3 -> 10 other accounts on its IP addresses      |

2. Each *pattern* is a combination of signals that is far more telling than either alone;
   its strength is the weaker of its parts (both must hold):

   | pattern                  | weight | parts                                                 |
   |--------------------------|--------|-------------------------------------------------------|
   | cycling_beyond_means     | 0.90   | fast_cycling and deposits_beyond_income               |
   | synthetic_identity       | 1.10   | weak_face_match and new_account                       |
   | mule_network             | 1.00   | shared_device and (shared_ip or fast_cycling)         |
   | vpn_hopping              | 0.70   | heavy_vpn and many_countries                          |
   | new_account_moving_money | 0.60   | new_account and (fast_cycling or deposits_beyond_income) |

3. The evidence is the sum of weight x strength over signals and patterns, and
   `fraud_probability = 1 - exp(-evidence)`: it grows with each piece of evidence and
   never reaches 1.
4. One signal is not enough. Frequent travellers visit many countries, households share a
   device and an IP address, privacy-minded people use VPNs, high earners deposit a lot,
   and every customer was new once. Unless at least two signals fire (strength >= 0.4),
   the probability is capped at 0.45, so a single signal raises an alert to medium at
   most; combinations are what make an alert high or critical. A household (one or two
   other accounts on a device, up to three on an IP) does not fire the network signals.
5. `risk_level`: critical from 0.80, high from 0.60, medium from 0.30, otherwise low.
6. `anomaly_score` is the strongest single signal: how unusual the most unusual feature
   is. Unlike `fraud_probability` it needs no corroboration, so a frequent traveller is
   anomalous (many countries) without being risky.
7. `risk_factors` are the sentences of every signal and pattern that fired, strongest
   first; `one_line_explanation` is the top two of them, or says that nothing stands out.

The ramps' start and end values live in casework/fraud/thresholds.py, the one threshold
table the offline analysts read too. The weights were set by hand from what investigators look for, then checked against the
demo population (casework/fraud/demo_data.py) and the hard negatives in tests/fraud/
test_scoring.py. They are not learned and they are not a substitute for the agents'
assessment; they give every alert a defensible starting priority.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from casework.fraud.thresholds import SCORER_RAMPS, ramp

# A signal "fires" (counts as evidence and is listed) from this strength.
FIRES_AT = 0.4
# With fewer than this many signals firing, the probability is capped ...
CORROBORATING_SIGNALS = 2
# ... at this value: medium at most.
SINGLE_SIGNAL_CAP = 0.45
RISK_THRESHOLDS: tuple[tuple[float, str], ...] = ((0.80, "critical"), (0.60, "high"), (0.30, "medium"))


def risk_level_for(probability: float) -> str:
    for threshold, level in RISK_THRESHOLDS:
        if probability >= threshold:
            return level
    return "low"


def _ramp(value: float, signal: str) -> float:
    """The signal's strength: 0 at its start, 1 at its end (casework/fraud/thresholds.py)."""
    return ramp(value, *SCORER_RAMPS[signal])


@dataclass(frozen=True)
class Factor:
    """One rule's verdict on one alert."""

    name: str
    label: str  # short, for a case title: "deposit-withdraw cycling"
    family: str  # money, identity, access, network, or pattern
    weight: float
    strength: float
    sentence: str

    @property
    def contribution(self) -> float:
        return self.weight * self.strength

    @property
    def fired(self) -> bool:
        return self.strength >= FIRES_AT

    def as_dict(self) -> dict:
        return {"name": self.name, "label": self.label, "family": self.family, "weight": self.weight,
                "strength": round(self.strength, 3), "contribution": round(self.contribution, 3),
                "fired": self.fired, "sentence": self.sentence}


@dataclass(frozen=True)
class Assessment:
    fraud_probability: float
    anomaly_score: float
    risk_level: str
    one_line_explanation: str
    risk_factors: list[str]
    # What a case title calls the alert ("deposit-withdraw cycling", "no strong signal").
    pattern_label: str
    corroborated: bool
    factors: list[Factor] = field(default_factory=list)

    def scores(self) -> dict:
        """The five fields an upstream model would have sent."""
        return {
            "fraud_probability": self.fraud_probability,
            "anomaly_score": self.anomaly_score,
            "risk_level": self.risk_level,
            "one_line_explanation": self.one_line_explanation,
            "risk_factors": list(self.risk_factors),
        }


def _signals(f: Mapping[str, float]) -> list[Factor]:
    cycle_days = float(f["deposit_withdraw_cycle_days_avg"])
    deposits = float(f["deposits_total"])
    withdrawn = float(f["withdrawals_total"])
    share_withdrawn = withdrawn / deposits if deposits > 0 else 0.0
    repetitions = min(int(f["deposits_count"]), int(f["withdrawals_count"]))
    cycling = (_ramp(cycle_days, "cycle_days") * _ramp(share_withdrawn, "share_withdrawn") * _ramp(repetitions, "repetitions"))
    ratio = float(f["deposits_vs_income_ratio"])
    income = float(f["declared_income_annual"])
    face = float(f["kyc_face_match_score"])
    age = int(f["account_age_days"])
    vpn = float(f["vpn_usage_pct"])
    countries = int(f["countries_accessed_count"])
    devices = int(f["device_shared_count"])
    ips = int(f["ip_shared_count"])
    return [
        Factor("fast_cycling", "deposit-withdraw cycling", "money", 0.90, cycling,
               f"Deposits leave again after {cycle_days:.1f} days on average, with {share_withdrawn:.0%} of the "
               f"money withdrawn ({int(f['deposits_count'])} deposits, {int(f['withdrawals_count'])} withdrawals)."),
        Factor("deposits_beyond_income", "deposits beyond declared income", "money", 0.70, _ramp(ratio, "deposits_vs_income"),
               f"Deposits are {ratio:.1f}x the declared annual income of {income:,.0f}."),
        Factor("weak_face_match", "weak face match", "identity", 0.80, _ramp(face, "face_match"),
               f"The onboarding face match scored {face:.2f}; genuine customers usually score above 0.80."),
        Factor("new_account", "new account", "identity", 0.25, _ramp(age, "account_age_days"),
               f"The account is {age} day{'s' if age != 1 else ''} old."),
        Factor("heavy_vpn", "heavy VPN use", "access", 0.30, _ramp(vpn, "vpn_pct"),
               f"{vpn:.0f}% of sessions came through a VPN or proxy."),
        Factor("many_countries", "access from many countries", "access", 0.30, _ramp(countries, "countries"),
               f"The account was accessed from {countries} countries."),
        Factor("shared_device", "shared devices", "network", 0.60, _ramp(devices, "shared_devices"),
               f"Its devices are shared with {devices} other accounts."),
        Factor("shared_ip", "shared IP addresses", "network", 0.35, _ramp(ips, "shared_ips"),
               f"Its IP addresses are shared with {ips} other accounts."),
    ]


def _patterns(s: dict[str, Factor]) -> list[Factor]:
    def st(name: str) -> float:
        return s[name].strength

    return [
        Factor("cycling_beyond_means", "deposit-withdraw cycling", "pattern", 0.90,
               min(st("fast_cycling"), st("deposits_beyond_income")),
               "Money cycles through the account quickly and far beyond the declared income: "
               "the deposit-withdraw laundering pattern."),
        Factor("synthetic_identity", "synthetic identity", "pattern", 1.10,
               min(st("weak_face_match"), st("new_account")),
               "A weak face match on a brand-new account: the profile of a synthetic or borrowed identity."),
        Factor("mule_network", "mule network", "pattern", 1.00,
               min(st("shared_device"), max(st("shared_ip"), st("fast_cycling"))),
               "Several accounts share its devices while money or connections are shared too: "
               "the shape of a mule network."),
        Factor("vpn_hopping", "VPN hopping", "pattern", 0.70,
               min(st("heavy_vpn"), st("many_countries")),
               "Heavy VPN use across many countries: access is being disguised, which a traveller's is not."),
        Factor("new_account_moving_money", "new account moving large sums", "pattern", 0.60,
               min(st("new_account"), max(st("fast_cycling"), st("deposits_beyond_income"))),
               "A new account is already moving large sums."),
    ]


def assess(features: Mapping[str, float]) -> Assessment:
    """Score one alert from its 13 features (a dict, or anything with `features_of`)."""
    signals = _signals(features)
    by_name = {factor.name: factor for factor in signals}
    patterns = _patterns(by_name)
    factors = signals + patterns

    evidence = sum(factor.contribution for factor in factors)
    probability = 1.0 - math.exp(-evidence)
    fired_signals = [s for s in signals if s.fired]
    corroborated = len(fired_signals) >= CORROBORATING_SIGNALS
    if not corroborated:
        probability = min(probability, SINGLE_SIGNAL_CAP)
    probability = round(probability, 3)
    level = risk_level_for(probability)

    fired = sorted((f for f in factors if f.fired), key=lambda f: f.contribution, reverse=True)
    risk_factors = [f.sentence for f in fired]
    if not fired:
        explanation = "No risk factor stands out: the features are within the usual ranges."
        label = "no strong signal"
    else:
        explanation = " ".join(f.sentence for f in fired[:2])
        fired_patterns = [f for f in fired if f.family == "pattern"]
        label = (fired_patterns or fired)[0].label
        if not corroborated:
            explanation += f" A single signal is not enough to call this fraud, so the risk stays {level}."
    return Assessment(
        fraud_probability=probability,
        anomaly_score=round(max(s.strength for s in signals), 3),
        risk_level=level,
        one_line_explanation=explanation,
        risk_factors=risk_factors,
        pattern_label=label,
        corroborated=corroborated,
        factors=factors,
    )
