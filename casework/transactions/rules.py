"""Detection rules in a small declarative form (their back-test over recent history is
casework/transactions/backtest.py).

A rule is a list of conditions that must all hold for a transaction:

    [{"field": "amount", "op": "gte", "value": 400},
     {"field": "mcc", "op": "in", "value": ["5732", "6051"]},
     {"field": "foreign", "op": "eq", "value": true}]

Fields are the transaction's own (amount, mcc, country, channel, hour in UTC, and the
monitoring fields: currency, auth_result, three_ds, avs, cvv, bin, merchant_id) and one
derived from its account (foreign: the country differs from the card's home country), so a
rule is evaluated row by row, with no state: the same on a back-test and in production.

`amount` is the amount in the settlement currency (SETTLEMENT_CURRENCY, converted at
ingestion with the stored rates), so 500 means 500 EUR whatever the card was charged in.

The language is safe by construction: no expressions, no eval; at most MAX_CONDITIONS
conditions of at most MAX_LIST_VALUES values each, so a rule's cost per transaction is bounded.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_CONDITIONS = 10
MAX_LIST_VALUES = 200

FIELDS = {
    "amount": "number",
    "hour": "number",
    "mcc": "text",
    "country": "text",
    "channel": "text",
    "currency": "text",
    "auth_result": "text",
    "three_ds": "text",
    "avs": "text",
    "cvv": "text",
    "bin": "text",
    "merchant_id": "text",
    "foreign": "bool",
}
OPS = {"number": {"gte", "lte", "eq"}, "text": {"eq", "in", "not_in"}, "bool": {"eq"}}


class Condition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: Literal["amount", "hour", "mcc", "country", "channel", "currency", "auth_result", "three_ds", "avs",
                   "cvv", "bin", "merchant_id", "foreign"]
    op: Literal["gte", "lte", "eq", "in", "not_in"]
    value: Any

    @field_validator("value")
    @classmethod
    def _value_fits(cls, value, info):
        field = info.data.get("field")
        op = info.data.get("op")
        kind = FIELDS.get(field)
        if kind is None or op is None:
            return value
        if op not in OPS[kind]:
            raise ValueError(f"{field} takes the operators {', '.join(sorted(OPS[kind]))}; not {op}.")
        if kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ValueError(f"{field} compares with a number.")
        if kind == "bool" and not isinstance(value, bool):
            raise ValueError(f"{field} is true or false.")
        if kind == "text":
            if op in ("in", "not_in"):
                if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"{field} {op} takes a non-empty list of strings.")
                if len(value) > MAX_LIST_VALUES:
                    raise ValueError(f"{field} {op} takes at most {MAX_LIST_VALUES} values.")
            elif not isinstance(value, str):
                raise ValueError(f"{field} eq takes a string.")
        return value


class Rule(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=120)
    description: str = Field(default="", max_length=2_000)
    conditions: list[Condition] = Field(min_length=1, max_length=MAX_CONDITIONS)


def _holds(condition: Condition, row: dict) -> bool:
    actual = row[condition.field]
    value = condition.value
    match condition.op:
        case "gte":
            return actual >= value
        case "lte":
            return actual <= value
        case "eq":
            return actual == value
        case "in":
            return actual in value
        case "not_in":
            return actual not in value
    return False


def rule_matches(conditions: list[Condition], row: dict) -> bool:
    return all(_holds(c, row) for c in conditions)


def row_of(*, amount, mcc, country, channel, occurred_at, home_country, is_fraud=False, currency="",
           auth_result="", three_ds="", avs="", cvv="", bin="", merchant_id="") -> dict:  # noqa: A002
    return {"amount": float(amount), "mcc": mcc, "country": country, "channel": channel,
            "hour": occurred_at.hour, "foreign": country != home_country, "is_fraud": bool(is_fraud),
            "currency": currency, "auth_result": auth_result, "three_ds": three_ds, "avs": avs, "cvv": cvv,
            "bin": bin, "merchant_id": merchant_id}


# The columns a rule reads, in row_of's order after the first six (for values_list).
ROW_COLUMNS = ("settlement_amount", "amount", "mcc", "country", "channel", "occurred_at", "account__home_country",
               "is_fraud", "currency", "auth_result", "three_ds_result", "avs_result", "cvv_result", "bin",
               "merchant_id")


def row_from_values(values) -> dict:
    """row_of over one values_list(*ROW_COLUMNS) tuple (the settlement amount when known)."""
    (settlement, amount, mcc, country, channel, occurred_at, home, is_fraud, currency, auth, three_ds, avs, cvv,
     bin_, merchant_id) = values
    return row_of(amount=settlement if settlement is not None else amount, mcc=mcc, country=country,
                  channel=channel, occurred_at=occurred_at, home_country=home, is_fraud=is_fraud, currency=currency,
                  auth_result=auth, three_ds=three_ds, avs=avs, cvv=cvv, bin=bin_, merchant_id=merchant_id)


def describe(conditions: list[dict]) -> str:
    words = {"gte": "≥", "lte": "≤", "eq": "=", "in": "in", "not_in": "not in"}
    parts = []
    for c in conditions:
        value = ", ".join(c["value"]) if isinstance(c["value"], list) else c["value"]
        parts.append(f"{c['field']} {words.get(c['op'], c['op'])} {value}")
    return " and ".join(parts)
