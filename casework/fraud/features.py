"""The alert's inputs, named exactly as the upstream model, the API, the CSV header and the
database columns name them. Everything that needs the list of features (the model's
constraints, validation, the CSV reader, the scorer, similarity) reads it from here.

Money amounts are analytics features computed upstream, not ledger entries, so they are
floats; nothing here adds or moves money.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The largest count we accept. Counts are stored in 32-bit integer columns; anything near
# this is a broken upstream feed, and refusing it gives a clear error instead of a 500.
MAX_COUNT = 1_000_000_000
# The largest amount, ratio or number of days we accept. A value like 1e300 is a broken feed
# too: it would overflow the ratios and scores computed from it (to inf, which no JSON column
# stores), so the row is refused with its field named instead.
MAX_AMOUNT = 1_000_000_000_000


@dataclass(frozen=True)
class Feature:
    name: str
    integer: bool
    description: str
    maximum: float | None = None
    # Similarity: features with a long right tail (money, counts, days, ratios) are compared
    # on log1p; bounded ones as they are. `scale` is one typical spread in those units.
    log: bool = True
    scale: float = 1.0

    @property
    def minimum(self) -> float:
        return 0

    def transform(self, value: float) -> float:
        value = float(value)
        return math.log1p(value) if self.log else value


FEATURES: tuple[Feature, ...] = (
    Feature("declared_income_annual", False, "Income the customer declared at onboarding, per year.",
            maximum=MAX_AMOUNT, scale=0.8),
    Feature("deposits_total", False, "Sum of deposits in the alert window.",
            maximum=MAX_AMOUNT, scale=1.1),
    Feature("deposits_count", True, "Number of deposits in the alert window.", maximum=MAX_COUNT, scale=0.7),
    Feature("withdrawals_total", False, "Sum of withdrawals in the alert window.",
            maximum=MAX_AMOUNT, scale=1.4),
    Feature("withdrawals_count", True, "Number of withdrawals in the alert window.", maximum=MAX_COUNT, scale=0.9),
    Feature("deposit_withdraw_cycle_days_avg", False,
            "Average days from a deposit to the withdrawal that empties it.", maximum=MAX_AMOUNT, scale=0.9),
    Feature("deposits_vs_income_ratio", False, "Deposits total divided by declared annual income.",
            maximum=MAX_AMOUNT, scale=0.5),
    Feature("kyc_face_match_score", False,
            "Similarity of the onboarding selfie to the identity document, 0 to 1 (1 is a certain match).",
            maximum=1, log=False, scale=0.15),
    Feature("account_age_days", True, "Days since the account was opened.", maximum=MAX_COUNT, scale=2.0),
    Feature("vpn_usage_pct", False, "Share of sessions through a VPN or anonymising proxy, 0 to 100.",
            maximum=100, log=False, scale=30.0),
    Feature("countries_accessed_count", True, "Countries the account was accessed from.",
            maximum=MAX_COUNT, scale=0.7),
    Feature("device_shared_count", True, "Other accounts seen on this account's devices.",
            maximum=MAX_COUNT, scale=0.6),
    Feature("ip_shared_count", True, "Other accounts seen on this account's IP addresses.",
            maximum=MAX_COUNT, scale=0.7),
)
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)
FEATURES_BY_NAME: dict[str, Feature] = {f.name: f for f in FEATURES}

# The upstream model's optional outputs; our scorer fills whichever are missing.
SCORE_NAMES: tuple[str, ...] = (
    "fraud_probability", "anomaly_score", "risk_level", "one_line_explanation", "risk_factors",
)
RISK_LEVELS: tuple[str, ...] = ("low", "medium", "high", "critical")

# Optional: the devices and IP addresses the account was seen on (identifiers as upstream
# knows them). They link accounts, so the network agent learns how many linked accounts were
# confirmed as fraud. Lists, like risk_factors.
LINK_NAMES: tuple[str, ...] = ("device_ids", "ip_addresses")
LIST_FIELDS: tuple[str, ...] = ("risk_factors", *LINK_NAMES)

# Every name an alert may carry, in the order of the CSV header we write.
REQUIRED_FIELDS: tuple[str, ...] = ("account_id", *FEATURE_NAMES)
ALL_FIELDS: tuple[str, ...] = (*REQUIRED_FIELDS, *SCORE_NAMES, *LINK_NAMES)


def features_of(obj) -> dict[str, float]:
    """The 13 features of an alert, an AlertIn or a dict, as plain numbers."""
    if isinstance(obj, dict):
        return {name: obj[name] for name in FEATURE_NAMES}
    return {name: getattr(obj, name) for name in FEATURE_NAMES}
