"""Incoming transactions: one definition for the API, the CSV import and the demo."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from ipaddress import IPv4Address, IPv6Address
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator
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
    # What fraud teams rely on (all optional).
    auth_result: Literal["", "approved", "declined"] = Field(default="", description="The authorisation's result.")
    three_ds_result: Literal["", "authenticated", "attempted", "failed", "not_enrolled"] = Field(
        default="", description="3-D Secure.")
    avs_result: Literal["", "match", "partial", "no_match", "unavailable"] = Field(default="",
                                                                                   description="Address check.")
    cvv_result: Literal["", "match", "no_match", "unavailable"] = Field(default="", description="CVV check.")
    ip_address: IPv4Address | IPv6Address | None = Field(default=None, description="The buyer's IP address.")
    email: str = Field(default="", max_length=254, description="The buyer's email: only its SHA-256 is stored.")
    email_hash: str = Field(default="", pattern=r"^([0-9a-f]{64})?$",
                            description="SHA-256 (hex) of the lower-cased email, when the email is not sent.")
    bin: str = Field(default="", pattern=r"^(\d{6,8})?$", description="The card's first 6 to 8 digits.")
    merchant_id: str = Field(default="", max_length=64)

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        if value and ("@" not in value or " " in value.strip()):
            raise ValueError("Not an email address.")
        return value

    @model_validator(mode="after")
    def _hash_email(self):
        if self.email:
            digest = hashlib.sha256(self.email.strip().lower().encode()).hexdigest()
            if self.email_hash and self.email_hash != digest:
                raise ValueError("email_hash does not match email; send one of them.")
            self.email_hash, self.email = digest, ""
        return self

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
