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

A condition may also test membership of a value list (casework/transactions/lists):

    {"in_list": "deny-devices", "field": "device"}

holds when the transaction's device is an unexpired entry of the list named deny-devices.
The list fields are card (the card account's id), email_hash, ip, device, merchant
(merchant_id) and bin; a rule's lookups go through a ListLookup (one indexed query per
value, remembered for the request or batch), so they too read no history.

The language is safe by construction: no expressions, no eval; at most MAX_CONDITIONS
conditions of at most MAX_LIST_VALUES values each, so a rule's cost per transaction is bounded.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

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


# The fields a list holds values of, and the row key each is read from.
LIST_FIELDS = {"card": "card", "email_hash": "email_hash", "ip": "ip", "device": "device",
               "merchant": "merchant_id", "bin": "bin"}


class ListCondition(BaseModel):
    """The transaction's value of `field` is on the list named `in_list` (unexpired)."""

    model_config = ConfigDict(extra="forbid")

    in_list: str = Field(min_length=1, max_length=60, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    field: Literal["card", "email_hash", "ip", "device", "merchant", "bin"]


def _kind(value) -> str:
    if isinstance(value, ListCondition) or (isinstance(value, dict) and "in_list" in value):
        return "list"
    return "compare"


AnyCondition = Annotated[Annotated[Condition, Tag("compare")] | Annotated[ListCondition, Tag("list")],
                         Discriminator(_kind)]


class ListMembership(Protocol):
    def contains(self, list_name: str, value: str) -> bool: ...


class Rule(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=120)
    description: str = Field(default="", max_length=2_000)
    conditions: list[AnyCondition] = Field(min_length=1, max_length=MAX_CONDITIONS)


def parse_conditions(conditions: list) -> list[Condition | ListCondition]:
    """Stored conditions (dicts) as condition objects, each of its kind."""
    return [c if isinstance(c, Condition | ListCondition)
            else (ListCondition if _kind(c) == "list" else Condition).model_validate(c) for c in conditions]


def _holds(condition: Condition | ListCondition, row: dict, lists: ListMembership | None) -> bool:
    if isinstance(condition, ListCondition):
        value = row.get(LIST_FIELDS[condition.field]) or ""
        return bool(value) and lists is not None and lists.contains(condition.in_list, value)
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


def rule_matches(conditions: list[Condition | ListCondition], row: dict, lists: ListMembership | None = None) -> bool:
    """All conditions hold. List conditions ask `lists` (none given: a list condition fails)."""
    return all(_holds(c, row, lists) for c in conditions)


def row_of(*, amount, mcc, country, channel, occurred_at, home_country, is_fraud=False, currency="",
           auth_result="", three_ds="", avs="", cvv="", bin="", merchant_id="", card="", device="",  # noqa: A002
           ip="", email_hash="") -> dict:
    return {"amount": float(amount), "mcc": mcc, "country": country, "channel": channel,
            "hour": occurred_at.hour, "foreign": country != home_country, "is_fraud": bool(is_fraud),
            "currency": currency, "auth_result": auth_result, "three_ds": three_ds, "avs": avs, "cvv": cvv,
            "bin": bin, "merchant_id": merchant_id, "card": card, "device": device, "ip": str(ip or ""),
            "email_hash": email_hash}


# The columns a rule reads, in row_of's order after the first six (for values_list).
ROW_COLUMNS = ("settlement_amount", "amount", "mcc", "country", "channel", "occurred_at", "account__home_country",
               "is_fraud", "currency", "auth_result", "three_ds_result", "avs_result", "cvv_result", "bin",
               "merchant_id", "account__account_id", "device_id", "ip_address", "email_hash")


def row_from_values(values) -> dict:
    """row_of over one values_list(*ROW_COLUMNS) tuple (the settlement amount when known)."""
    (settlement, amount, mcc, country, channel, occurred_at, home, is_fraud, currency, auth, three_ds, avs, cvv,
     bin_, merchant_id, card, device, ip, email_hash) = values
    return row_of(amount=settlement if settlement is not None else amount, mcc=mcc, country=country,
                  channel=channel, occurred_at=occurred_at, home_country=home, is_fraud=is_fraud, currency=currency,
                  auth_result=auth, three_ds=three_ds, avs=avs, cvv=cvv, bin=bin_, merchant_id=merchant_id,
                  card=card, device=device, ip=ip, email_hash=email_hash)


def describe(conditions: list[dict]) -> str:
    words = {"gte": "≥", "lte": "≤", "eq": "=", "in": "in", "not_in": "not in"}
    parts = []
    for c in conditions:
        if "in_list" in c:
            parts.append(f"{c['field']} on list {c['in_list']}")
            continue
        value = ", ".join(c["value"]) if isinstance(c["value"], list) else c["value"]
        parts.append(f"{c['field']} {words.get(c['op'], c['op'])} {value}")
    return " and ".join(parts)
