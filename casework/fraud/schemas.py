"""What an incoming alert must look like, for every channel (API, CSV, admin, demo).

`AlertIn` is the one definition of the alert's fields and ranges; the OpenAPI schema is
generated from it. `alert_validate` and `alerts_validate` turn pydantic's errors into
Django ValidationErrors keyed by field ("vpn_usage_pct"), or by row and field for a batch
("row 3: vpn_usage_pct", "line 4: vpn_usage_pct" for CSV files).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from django.core.exceptions import ValidationError
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic import ValidationError as PydanticValidationError

from casework.fraud.features import ALL_FIELDS, FEATURES_BY_NAME, MAX_AMOUNT, MAX_COUNT

Money = Annotated[float, Field(ge=0, le=MAX_AMOUNT, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
RiskFactor = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
Identifier = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=128)]
MAX_LINKS = 50

MAX_RISK_FACTORS = 20


class AlertIn(BaseModel):
    """One fraud alert: an account, its 13 features and, optionally, the upstream model's scores."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    account_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$",
                            description="The account's identifier in the core banking system.",
                            examples=["ACC-1043"])
    declared_income_annual: Money = Field(description="Income the customer declared at onboarding, per year.")
    deposits_total: Money = Field(description="Sum of deposits in the alert window.")
    deposits_count: Count = Field(description="Number of deposits in the alert window.")
    withdrawals_total: Money = Field(description="Sum of withdrawals in the alert window.")
    withdrawals_count: Count = Field(description="Number of withdrawals in the alert window.")
    deposit_withdraw_cycle_days_avg: Money = Field(
        description="Average days from a deposit to the withdrawal that empties it.")
    deposits_vs_income_ratio: Money = Field(description="Deposits total divided by declared annual income.")
    kyc_face_match_score: float = Field(ge=0, le=1, allow_inf_nan=False,
                                        description="Onboarding selfie vs identity document, 0 to 1.")
    account_age_days: Count = Field(description="Days since the account was opened.")
    vpn_usage_pct: float = Field(ge=0, le=100, allow_inf_nan=False,
                                 description="Share of sessions through a VPN or proxy, 0 to 100.")
    countries_accessed_count: Count = Field(description="Countries the account was accessed from.")
    device_shared_count: Count = Field(description="Other accounts seen on this account's devices.")
    ip_shared_count: Count = Field(description="Other accounts seen on this account's IP addresses.")

    fraud_probability: float | None = Field(None, ge=0, le=1, allow_inf_nan=False,
                                            description="Upstream model's fraud probability, 0 to 1.")
    anomaly_score: float | None = Field(None, ge=0, le=1, allow_inf_nan=False,
                                        description="Upstream model's anomaly score, 0 to 1.")
    risk_level: Literal["low", "medium", "high", "critical"] | None = Field(
        None, description="Upstream model's risk level.")
    one_line_explanation: str | None = Field(None, max_length=500,
                                             description="Upstream model's one-line explanation.")
    risk_factors: list[RiskFactor] | None = Field(None, max_length=MAX_RISK_FACTORS,
                                                  description="Upstream model's risk factors, as sentences.")
    device_ids: list[Identifier] | None = Field(None, max_length=MAX_LINKS, description=(
        "Devices the account was seen on (upstream's identifiers); accounts sharing one are linked."))
    ip_addresses: list[Identifier] | None = Field(None, max_length=MAX_LINKS, description=(
        "IP addresses the account was seen on; accounts sharing one are linked."))

    def upstream_scores(self) -> dict[str, Any]:
        """The score fields upstream actually sent (blank ones count as not sent)."""
        sent = {}
        for name in ("fraud_probability", "anomaly_score", "risk_level", "one_line_explanation", "risk_factors"):
            value = getattr(self, name)
            if value is not None and value != "" and value != []:
                sent[name] = value
        return sent


def _range_text(field: str, kind: str) -> str:
    feature = FEATURES_BY_NAME.get(field)
    if field in ("fraud_probability", "anomaly_score"):
        return "between 0 and 1"
    if feature is not None and feature.maximum is not None and feature.maximum < MAX_COUNT:
        return f"between 0 and {feature.maximum:g}"
    if feature is not None and feature.maximum == MAX_AMOUNT and kind.startswith("less"):
        return f"at most {MAX_AMOUNT:,}"
    if kind.startswith("less"):
        return f"at most {MAX_COUNT:,}"
    return "0 or more"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _message(error: dict) -> str:
    """A person-readable message for one pydantic error."""
    kind = error["type"]
    field = str(error["loc"][0]) if error["loc"] else ""
    value = error.get("input")
    if kind == "missing":
        return "This field is required."
    if kind == "extra_forbidden":
        return f"Unknown field. Expected only: {', '.join(ALL_FIELDS)}."
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return f"Must be {_range_text(field, kind)}; got {_shown(value)}."
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"Must be a whole number; got {_shown(value)}."
    if kind in ("float_parsing", "float_type"):
        return f"Must be a number; got {_shown(value)}."
    if kind == "finite_number":
        return "Must be a finite number."
    if kind == "literal_error":
        return f"Must be one of low, medium, high, critical; got {_shown(value)}."
    if kind == "string_pattern_mismatch" and field == "account_id":
        return "Use letters, digits and . _ : / - only, starting with a letter or digit."
    if kind == "too_long" and field == "risk_factors":
        return f"At most {MAX_RISK_FACTORS} risk factors."
    if kind == "too_long" and field in ("device_ids", "ip_addresses"):
        return f"At most {MAX_LINKS} identifiers."
    if kind == "model_type":
        return "Each alert must be a JSON object."
    return error["msg"] + "."


def _field_errors(exc: PydanticValidationError) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "__all__"
        messages = errors.setdefault(field, [])
        message = _message(error)
        if message not in messages:
            messages.append(message)
    return errors


def alert_validate(data: Any) -> AlertIn:
    """Validate one alert; ValidationError keyed by field name."""
    if not isinstance(data, dict):
        raise ValidationError({"__all__": ["Each alert must be a JSON object."]})
    try:
        return AlertIn.model_validate(data)
    except PydanticValidationError as exc:
        raise ValidationError(_field_errors(exc)) from None


def alerts_validate(
    rows: Sequence[Any], *, numbers: Sequence[int] | None = None, label: str = "row",
) -> tuple[list[tuple[int, AlertIn]], dict[str, list[str]]]:
    """Validate a batch. Returns (valid rows with their numbers, errors keyed "row N: field").

    Rows are numbered from 1 as the person sees them unless `numbers` says otherwise (a CSV
    reader passes file line numbers and label="line").
    """
    numbers = list(numbers) if numbers is not None else list(range(1, len(rows) + 1))
    valid: list[tuple[int, AlertIn]] = []
    errors: dict[str, list[str]] = {}
    for number, data in zip(numbers, rows, strict=True):
        try:
            valid.append((number, alert_validate(data)))
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                key = f"{label} {number}" if field == "__all__" else f"{label} {number}: {field}"
                errors[key] = messages
    return valid, errors
