"""Input builders: what each fraud agent is shown (seed 000, section 3.2), as plain dicts.

Pure functions of a plain dict of alert fields. Each picks exactly its agent's fields (a
missing one is passed as null, so the agent sees it is unknown rather than guessing), turns
Decimals and numeric strings into numbers, and bounds free text. The runtime fences the
dict as untrusted data in the user message; the offline analysts read the same dict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from casework.fraud.agents.schemas import OUTPUT_MODELS

# The 13 raw features every alert carries (seed 000; issue 4 names them exactly so).
FEATURE_FIELDS: tuple[str, ...] = (
    "declared_income_annual",
    "deposits_total",
    "deposits_count",
    "withdrawals_total",
    "withdrawals_count",
    "deposit_withdraw_cycle_days_avg",
    "deposits_vs_income_ratio",
    "kyc_face_match_score",
    "account_age_days",
    "vpn_usage_pct",
    "countries_accessed_count",
    "device_shared_count",
    "ip_shared_count",
)
INTEGER_FIELDS = frozenset({
    "deposits_count", "withdrawals_count", "account_age_days", "countries_accessed_count",
    "device_shared_count", "ip_shared_count",
})
NUMBER_FIELDS = frozenset(FEATURE_FIELDS) | {"fraud_probability", "anomaly_score"}

TRANSACTION_FIELDS = (
    "declared_income_annual", "deposits_total", "deposits_count", "withdrawals_total", "withdrawals_count",
    "deposit_withdraw_cycle_days_avg", "deposits_vs_income_ratio", "fraud_probability", "anomaly_score",
)
IDENTITY_FIELDS = ("kyc_face_match_score", "account_age_days", "fraud_probability")
GEO_FIELDS = ("vpn_usage_pct", "countries_accessed_count", "fraud_probability")
NETWORK_FIELDS = ("device_shared_count", "ip_shared_count", "fraud_probability")
OUTCOME_SIMILARITY_FIELDS = ("fraud_probability", "risk_level", "one_line_explanation")
KNOWLEDGE_CAPTURE_ALERT_FIELDS = ("account_id", "fraud_probability", "risk_level", "one_line_explanation",
                                  "risk_factors")

SPECIALIST_IDS: tuple[str, ...] = ("transaction", "identity", "geo", "network", "outcome_similarity")
# Keys that carry a failure or runtime book-keeping, never findings: the orchestrator must not see them.
ERROR_KEYS = frozenset({"_error", "error", "error_type", "errors", "_error_type"})

MAX_TEXT = 500
MAX_REASON = 2000
MAX_LIST = 10

OUTCOME_LABELS = {
    "confirmedfraud": "Confirmed Fraud", "confirmfraud": "Confirmed Fraud", "fraud": "Confirmed Fraud",
    "confirmed": "Confirmed Fraud",
    "markedlegit": "Marked Legit", "marklegit": "Marked Legit", "legit": "Marked Legit",
    "legitimate": "Marked Legit",
    "falsepositive": "False Positive", "dismissed": "False Positive", "dismiss": "False Positive",
    "dismissasfalsepositive": "False Positive", "dismissedasfalsepositive": "False Positive",
}


# -- value cleaning -----------------------------------------------------------------------


def _number(value: Any, *, integer: bool = False) -> int | float | None:
    """A finite number, or None: Decimals and numeric strings are converted, anything else is unknown."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        value = float(value)
    elif isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    if integer and float(value).is_integer():
        return int(value)
    return float(value) if not isinstance(value, int) else value


def _text(value: Any, limit: int = MAX_TEXT) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text[:limit] if text else None


def _string_list(value: Any, limit: int = MAX_LIST) -> list[str]:
    """Risk factors arrive as a list, a JSON list in a string, or one string."""
    if value is None:
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                value = json.loads(stripped)
            except ValueError:
                value = [stripped]
        else:
            value = [stripped] if stripped else []
    if not isinstance(value, Iterable) or isinstance(value, Mapping):
        return [_text(value)] if _text(value) else []
    return [t for t in (_text(v, 200) for v in value) if t][:limit]


def _field(alert: Mapping[str, Any], name: str) -> Any:
    value = alert.get(name)
    if name in NUMBER_FIELDS:
        return _number(value, integer=name in INTEGER_FIELDS)
    if name == "risk_factors":
        return _string_list(value)
    if name == "risk_level":
        text = _text(value, 20)
        return text.lower() if text else None
    return _text(value)


def _pick(alert: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    return {name: _field(alert, name) for name in names}


def _plain(value: Any, depth: int = 0) -> Any:
    """JSON-safe copy of a summary value, bounded in size and depth."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float | Decimal):
        return _number(value)
    if isinstance(value, str):
        return _text(value, 300)
    if depth >= 2:
        return _text(value, 300)
    if isinstance(value, Mapping):
        return {str(k)[:60]: _plain(v, depth + 1) for k, v in list(value.items())[:20]}
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in list(value)[:MAX_LIST]]
    return _text(value, 300)


def normalise_outcome(outcome: Any) -> str:
    """'confirmed_fraud', 'Confirm Fraud', 'legit', 'dismissed' ... -> the seed's three labels."""
    text = _text(outcome, 100) or ""
    key = "".join(ch for ch in text.lower() if ch.isalnum())
    return OUTCOME_LABELS.get(key, text)


# -- specialists --------------------------------------------------------------------------


def build_transaction_input(alert: Mapping[str, Any]) -> dict[str, Any]:
    return _pick(alert, TRANSACTION_FIELDS)


def build_identity_input(alert: Mapping[str, Any]) -> dict[str, Any]:
    return _pick(alert, IDENTITY_FIELDS)


def build_geo_input(alert: Mapping[str, Any]) -> dict[str, Any]:
    return _pick(alert, GEO_FIELDS)


def build_network_input(alert: Mapping[str, Any], known_fraud_links_from_system: int | None = None) -> dict[str, Any]:
    """The seed's network fields; the system's count of confirmed-fraud accounts sharing a
    device or IP with this one is added only when the system knows it."""
    data = _pick(alert, NETWORK_FIELDS)
    links = _number(known_fraud_links_from_system, integer=True)
    if links is not None:
        data["known_fraud_links_from_system"] = max(0, int(links))
    return data


def build_outcome_similarity_input(
    alert: Mapping[str, Any],
    similar_confirmed_cases_count_from_system: int = 0,
    similar_cases: list[Mapping[str, Any]] | None = None,
    knowledge_patterns: list[Mapping[str, Any]] | None = None,
    similar_cleared_cases: list[Mapping[str, Any]] | None = None,
    similar_cleared_cases_count_from_system: int | None = None,
    similar_count_is_lower_bound: bool = False,
) -> dict[str, Any]:
    """The seed's fields, plus brief summaries of the nearest confirmed cases and the
    patterns captured when past cases closed (they feed the explanation). Look-alikes a
    person cleared (legit, false positive) are given when there are any: they count against."""
    data = _pick(alert, OUTCOME_SIMILARITY_FIELDS)
    count = _number(similar_confirmed_cases_count_from_system, integer=True)
    data["similar_confirmed_cases_count_from_system"] = max(0, int(count or 0))
    if similar_count_is_lower_bound:
        # The look-alike search read only the newest decided cases of a crowded region
        # (casework/fraud/similarity.py): the count means "this many or more".
        data["similar_confirmed_cases_count_is_lower_bound"] = True
    data["similar_cases"] = [_plain(dict(case)) for case in (similar_cases or [])[:MAX_LIST]]
    cleared = _number(similar_cleared_cases_count_from_system, integer=True)
    if cleared:
        data["similar_cleared_cases_count_from_system"] = max(0, int(cleared))
        data["similar_cleared_cases"] = [_plain(dict(case)) for case in (similar_cleared_cases or [])[:MAX_LIST]]
    data["knowledge_patterns"] = [
        {key: _plain(pattern.get(key)) for key in
         ("behavioral_pattern", "one_sentence_description", "final_outcome", "key_signals")}
        for pattern in (knowledge_patterns or [])[:MAX_LIST]
    ]
    return data


# -- orchestrator and knowledge capture ---------------------------------------------------


def _clean_output(agent_id: str, value: Any) -> dict[str, Any] | None:
    """A specialist's findings without error or book-keeping fields; None when it failed.

    Accepts the output dict (possibly carrying `_error` / `error`) or an AgentResult-like
    object with `.output` and `.error`.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping) and hasattr(value, "output"):
        if getattr(value, "error", "") or value.output is None:
            return None
        value = value.output
    if not isinstance(value, Mapping):
        return None
    if any(value.get(key) for key in ERROR_KEYS):
        return None
    model = OUTPUT_MODELS.get(agent_id)
    keep = set(model.model_fields) if model is not None else None
    cleaned = {
        key: _plain(item) for key, item in value.items()
        if key not in ERROR_KEYS and not str(key).startswith("_") and (keep is None or key in keep)
    }
    return cleaned or None


def strip_errors(outputs: Mapping[str, Any], agent_ids: Iterable[str]) -> tuple[dict[str, dict], list[str]]:
    """(findings of the agents that answered, ids of those that failed or are missing)."""
    available: dict[str, dict] = {}
    unavailable: list[str] = []
    for agent_id in agent_ids:
        cleaned = _clean_output(agent_id, outputs.get(agent_id))
        if cleaned is None:
            unavailable.append(agent_id)
        else:
            available[agent_id] = cleaned
    return available, unavailable


def build_orchestrator_input(specialist_outputs: Mapping[str, Any]) -> dict[str, Any]:
    """The five specialists' merged findings (seed 000, 3.3 step 3), error fields stripped.

    A specialist that failed is absent and named in `unavailable_specialists`, without its
    error text: the orchestrator weighs what it has and says what it lacked.
    """
    available, unavailable = strip_errors(specialist_outputs, SPECIALIST_IDS)
    return {**available, "unavailable_specialists": unavailable}


def build_knowledge_capture_input(
    alert: Mapping[str, Any],
    outcome: str,
    reason: str,
    specialist_outputs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Alert summary, the investigator's outcome and reason, and (when given) what the
    specialists and the orchestrator found, errors stripped."""
    data = _pick(alert, KNOWLEDGE_CAPTURE_ALERT_FIELDS)
    data["outcome"] = normalise_outcome(outcome)
    data["reason"] = _text(reason, MAX_REASON) or ""
    if specialist_outputs is not None:
        findings, _ = strip_errors(specialist_outputs, (*SPECIALIST_IDS, "orchestrator"))
        data["agent_findings"] = findings
    return data
