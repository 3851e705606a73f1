"""What every offline fraud analyst shares: the bands from the one threshold table, the
rule collector that totals named weights, and number and plural formatting for the prose."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from casework.fraud.thresholds import GEO_BANDS, IDENTITY_BANDS, NETWORK_CLUSTER_BANDS, TRANSACTION_BANDS

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
