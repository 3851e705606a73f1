"""The fraud thresholds in one table, shared by the built-in scorer (casework/fraud/scoring.py),
the offline analysts (casework/fraud/agents/offline/) and the case page's
side-by-side view (casework/fraud/assessment.py).

Bands are (high from, medium from) on a 0-1 score unless said otherwise. Every rule is
graded: a value counts in proportion to how far past the rule's start it is, never as a step
at a cut-off, so one borderline value weighs little and several moderate ones add up.
"""

from __future__ import annotations

# The orchestrator's and the page's bands on the transaction anomaly score.
TRANSACTION_BANDS = (0.60, 0.35)
# Identity and geo bands on their rule scores.
IDENTITY_BANDS = (0.65, 0.35)
GEO_BANDS = (0.60, 0.30)
# Network bands on the cluster size (accounts sharing a device or IP with this one).
NETWORK_CLUSTER_BANDS = (6, 3)
# Outcome similarity: likelihood that this alert repeats a confirmed pattern.
LIKELIHOOD_BANDS = (0.70, 0.40)


def band(value: float, bands: tuple[float, float]) -> str:
    high, medium = bands
    return "high" if value >= high else "medium" if value >= medium else "low"


# --- The built-in scorer's signals: strength 0 at the first value, 1 at the second --------------
SCORER_RAMPS = {
    "cycle_days": (14.0, 2.0), "share_withdrawn": (0.5, 0.9), "repetitions": (1.0, 5.0),
    "deposits_vs_income": (1.5, 4.0), "face_match": (0.80, 0.45), "account_age_days": (90.0, 7.0),
    "vpn_pct": (40.0, 90.0), "countries": (4.0, 12.0), "shared_devices": (2.0, 6.0), "shared_ips": (3.0, 10.0),
}


# --- Graded rules of the offline analysts ---------------------------------------------------
# Each table is (value, weight) points, joined by straight lines: a value between two points
# weighs in proportion to how far it has come, so 0.69 and 0.72 weigh nearly the same and
# nothing jumps at a cut-off. Beyond the last point the weight stays at its value.
# Transaction: days from deposit to withdrawal (fewer is worse), deposits / declared income,
# share of deposits withdrawn again within a short cycle.
CYCLE_DAYS = ((12.0, 0.0), (10.0, 0.08), (7.0, 0.20), (4.0, 0.25), (2.0, 0.35))
DEPOSITS_VS_INCOME = ((1.3, 0.0), (1.6, 0.08), (2.0, 0.20), (3.0, 0.25), (5.0, 0.35))
PASS_THROUGH = ((0.7, 0.0), (0.8, 0.05), (0.9, 0.10))
# Identity: onboarding face match (lower is worse) and account age in days (younger is worse).
FACE_MATCH = ((0.85, 0.0), (0.80, 0.15), (0.70, 0.40), (0.55, 0.65), (0.40, 0.85))
ACCOUNT_AGE_DAYS = ((120.0, 0.0), (90.0, 0.05), (45.0, 0.10), (14.0, 0.15))
# Geo: share of sessions through a VPN, countries the account was reached from.
VPN_PCT = ((5.0, 0.0), (10.0, 0.10), (30.0, 0.30), (60.0, 0.40))
COUNTRIES = ((2.0, 0.0), (3.0, 0.05), (5.0, 0.15), (10.0, 0.25))
# Combinations (both parts must hold; the weaker part sets the strength, 0 to 1).
LAYERING = {"weight": 0.20, "cycle_days": (12.0, 7.0), "deposits_vs_income": (1.3, 2.0)}
SYNTHETIC_IDENTITY = {"weight": 0.25, "face_match": (0.80, 0.70), "account_age_days": (75.0, 45.0)}
VPN_HOPPING = {"weight": 0.30, "vpn_pct": (20.0, 30.0), "countries": (3.0, 5.0)}
# Network: accounts sharing a device (or, weaker, only an IP address) with this one.
NETWORK_CLUSTER = ((1.0, 0.0), (3.0, 1.0), (6.0, 2.0))
# The orchestrator: a dimension whose rules found something but stayed low is a weak signal
# worth this many points (high 2, medium 1), so weak signals in several dimensions add up.
WEAK_SIGNAL_POINTS = 0.5


def graded(value: float, points: tuple[tuple[float, float], ...]) -> float:
    """The weight of `value` on a graded rule: linear between the table's points."""
    (x0, y0), (x_last, y_last) = points[0], points[-1]
    rising = x_last > x0
    if (value <= x0) if rising else (value >= x0):
        return y0
    if (value >= x_last) if rising else (value <= x_last):
        return y_last
    for (xa, ya), (xb, yb) in zip(points, points[1:], strict=False):
        if min(xa, xb) <= value <= max(xa, xb):
            return ya + (yb - ya) * (value - xa) / (xb - xa)
    return y_last


def ramp(value: float, start: float, end: float) -> float:
    """0 at `start`, 1 at `end`, linear between (falling ramps too)."""
    if start == end:
        return 1.0 if value >= end else 0.0
    return min(1.0, max(0.0, (value - start) / (end - start)))
