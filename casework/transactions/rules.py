"""Detection rules in a small declarative form, and their back-test over recent history.

A rule is a list of conditions that must all hold for a transaction:

    [{"field": "amount", "op": "gte", "value": 400},
     {"field": "mcc", "op": "in", "value": ["5732", "6051"]},
     {"field": "foreign", "op": "eq", "value": true}]

Fields are the transaction's own (amount, mcc, country, channel, hour in UTC) and one
derived from its account (foreign: the country differs from the card's home country), so a
rule is evaluated row by row, with no state: the same on a back-test and in production.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

BACKTEST_WINDOW = 5_000

FIELDS = {
    "amount": "number",
    "hour": "number",
    "mcc": "text",
    "country": "text",
    "channel": "text",
    "foreign": "bool",
}
OPS = {"number": {"gte", "lte", "eq"}, "text": {"eq", "in", "not_in"}, "bool": {"eq"}}


class Condition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: Literal["amount", "hour", "mcc", "country", "channel", "foreign"]
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
            elif not isinstance(value, str):
                raise ValueError(f"{field} eq takes a string.")
        return value


class Rule(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=120)
    description: str = Field(default="", max_length=2_000)
    conditions: list[Condition] = Field(min_length=1, max_length=10)


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


def row_of(*, amount, mcc, country, channel, occurred_at, home_country, is_fraud=False) -> dict:
    return {"amount": float(amount), "mcc": mcc, "country": country, "channel": channel,
            "hour": occurred_at.hour, "foreign": country != home_country, "is_fraud": bool(is_fraud)}


def backtest(conditions: list[dict] | list[Condition], *, window: int = BACKTEST_WINDOW) -> dict:
    """How the rule would have done on the last `window` transactions of all accounts:
    "would have fired on N of the last M transactions, K of them confirmed fraud"."""
    from casework.transactions.models import Transaction

    parsed = [c if isinstance(c, Condition) else Condition.model_validate(c) for c in conditions]
    rows = (Transaction.objects.order_by("-occurred_at", "-id")
            .values_list("amount", "mcc", "country", "channel", "occurred_at", "account__home_country",
                         "is_fraud")[:window])
    considered = fired = fired_fraud = fraud_total = 0
    for amount, mcc, country, channel, occurred_at, home, is_fraud in rows:
        considered += 1
        fraud_total += is_fraud
        if rule_matches(parsed, row_of(amount=amount, mcc=mcc, country=country, channel=channel,
                                       occurred_at=occurred_at, home_country=home)):
            fired += 1
            fired_fraud += is_fraud
    return {
        "window": considered, "fired": fired, "fired_fraud": fired_fraud, "fraud_total": fraud_total,
        "precision": round(fired_fraud / fired, 3) if fired else None,
        "recall": round(fired_fraud / fraud_total, 3) if fraud_total else None,
        "summary": (f"Would have fired on {fired} of the last {considered} transactions, "
                    f"{fired_fraud} of them confirmed fraud."),
    }


def describe(conditions: list[dict]) -> str:
    words = {"gte": "≥", "lte": "≤", "eq": "=", "in": "in", "not_in": "not in"}
    parts = []
    for c in conditions:
        value = ", ".join(c["value"]) if isinstance(c["value"], list) else c["value"]
        parts.append(f"{c['field']} {words.get(c['op'], c['op'])} {value}")
    return " and ".join(parts)
