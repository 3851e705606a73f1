"""Incoming transactions: one definition for the API, the CSV import and the demo."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from pydantic import ValidationError as PydanticValidationError

Code2 = Annotated[str, StringConstraints(strip_whitespace=True, to_upper=True, pattern=r"^[A-Z]{2}$")]


class TransactionIn(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    transaction_id: str = Field(min_length=1, max_length=64, examples=["TX-20260301-0001"])
    account_id: str = Field(min_length=1, max_length=64, examples=["CARD-1001"])
    card_last4: str = Field(pattern=r"^\d{4}$", examples=["4242"])
    amount: Decimal = Field(gt=0, max_digits=12, decimal_places=2, examples=["129.90"])
    currency: str = Field(pattern=r"^[A-Z]{3}$", examples=["EUR"])
    merchant: str = Field(min_length=1, max_length=120)
    mcc: str = Field(pattern=r"^\d{4}$", description="Merchant category code, 4 digits.")
    country: Code2 = Field(description="Where the transaction happened, ISO 3166-1 alpha-2.")
    channel: str = Field(description="pos, contactless, ecommerce, atm or moto.")
    device_id: str = Field(default="", max_length=64)
    occurred_at: datetime = Field(description="ISO 8601 with a time zone.")
    home_country: Code2 | None = Field(default=None, description="The card's home country; needed for a new account.")
    holder_name: str = Field(default="", max_length=120)
    is_fraud: bool = Field(default=False, description="Confirmed fraud (a chargeback).")

    @field_validator("channel")
    @classmethod
    def _channel(cls, value: str) -> str:
        value = value.lower()
        if value not in ("pos", "contactless", "ecommerce", "atm", "moto"):
            raise ValueError("Use pos, contactless, ecommerce, atm or moto.")
        return value

    @field_validator("occurred_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("Give a time zone (e.g. 2026-03-01T12:30:00Z).")
        return value


def transactions_validate(rows: Sequence[Any], *, numbers: Sequence[int] | None = None,
                          label: str = "row") -> tuple[list[TransactionIn], dict[str, list[str]]]:
    """Every row validated; errors keyed "row 3: amount" (or "line 4: amount")."""
    valid: list[TransactionIn] = []
    errors: dict[str, list[str]] = {}
    for index, row in enumerate(rows):
        number = numbers[index] if numbers else index + 1
        if not isinstance(row, dict):
            errors[f"{label} {number}"] = ["Expected an object."]
            continue
        try:
            valid.append(TransactionIn.model_validate(row))
        except PydanticValidationError as exc:
            for error in exc.errors():
                field = ".".join(map(str, error["loc"])) or "__all__"
                errors.setdefault(f"{label} {number}: {field}", []).append(error["msg"])
    return valid, errors
