"""Detection rules in a small declarative form (their back-test over recent history is
casework/transactions/backtest.py).

A rule is a list of conditions that must all hold for a transaction:

    [{"field": "amount", "op": "gte", "value": 400},
     {"field": "mcc", "op": "in", "value": ["5732", "6051"]},
     {"field": "foreign", "op": "eq", "value": true}]

Fields are the transaction's own (amount, mcc, country, channel, hour in UTC, and the
monitoring fields: currency, auth_result, three_ds, avs, cvv, bin, merchant_id) and one
derived from its account (foreign: the country differs from the card's home country).

`amount` is the amount in the settlement currency (SETTLEMENT_CURRENCY, converted at
ingestion with the stored rates), so 500 means 500 EUR whatever the card was charged in.

Aggregates (velocity): a condition may compare an aggregate over the transaction's group
instead of a field, and a number may be compared with an aggregate times a factor:

    {"agg": {"fn": "count", "by": "card", "window": "10m"}, "op": "gte", "value": 6}
    {"agg": {"fn": "count_distinct", "of": "device", "by": "account", "window": "7d"}, "op": "gte", "value": 3}
    {"agg": {"fn": "count", "by": "card", "window": "1h",
             "where": [{"field": "auth_result", "op": "eq", "value": "declined"}]}, "op": "gte", "value": 3}
    {"field": "amount", "op": "gt",
     "than": {"agg": {"fn": "avg", "of": "amount", "by": "card", "window": "30d", "current": false}, "times": 3}}

`fn` is count, sum, avg (of amount) or count_distinct (of card, account, device, ip, email,
merchant, country, mcc, bin, channel or currency); `by` is card, account, device, ip, email
(its hash) or merchant (merchant_id, else the merchant's name); `window` is 1m to 90d
(minutes, hours or days); `where` filters the transactions counted with plain field
conditions (at most MAX_FILTERS); `current` (default true) counts the transaction itself.
An aggregate is read from counters maintained as transactions are ingested
(casework.transactions.aggregates), as of the transaction: never a scan of the history, so
the same on a back-test (which replays the history in time order) and in production. A
transaction without the group's value (no device, no IP) has no aggregate: the condition does
not hold, nor does an average over nothing.

A condition may also test membership of a value list (casework/transactions/lists):

    {"in_list": "deny-devices", "field": "device"}

holds when the transaction's device is an unexpired entry of the list named deny-devices.
The list fields are card (the card account's id), email_hash, ip, device, merchant
(merchant_id) and bin; a rule's lookups go through a ListLookup (one indexed query per
value, remembered for the request or batch), so they too read no history.

So a condition is one of three kinds, told apart by its keys: a field condition ("field",
"op", "value"), an aggregate condition ("agg", or "than" on a field), or a list condition
("in_list"). parse() reads all three; rule_matches(parsed, row, lookup) evaluates all three.

The language is safe by construction: no expressions, no eval; at most MAX_CONDITIONS
conditions of at most MAX_LIST_VALUES values each, so a rule's cost per transaction is bounded.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

MAX_CONDITIONS = 10
MAX_LIST_VALUES = 200
MAX_FILTERS = 5
MAX_FACTOR = 1000

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
OPS = {"number": {"gte", "lte", "gt", "lt", "eq"}, "text": {"eq", "in", "not_in"}, "bool": {"eq"}}
NUMBER_OPS = ("gte", "lte", "gt", "lt", "eq")

# Groups an aggregate is counted over, and the row key holding each one's value.
GROUPS = {"card": "card", "account": "account", "device": "device_id", "ip": "ip_address", "email": "email_hash",
          "merchant": "merchant_key"}
# What count_distinct counts the distinct values of.
DISTINCT = {**GROUPS, "country": "country", "mcc": "mcc", "bin": "bin", "channel": "channel", "currency": "currency"}
WINDOW_UNITS = {"m": 60, "h": 3600, "d": 86400}
MIN_WINDOW, MAX_WINDOW = 60, 90 * 86400


def window_seconds(text: str) -> int:
    return int(text[:-1]) * WINDOW_UNITS[text[-1]]


class Aggregate(BaseModel):
    """count / sum / avg / count_distinct over the transaction's group in a window."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fn: Literal["count", "sum", "avg", "count_distinct"]
    of: Literal["amount", "card", "account", "device", "ip", "email", "merchant", "country", "mcc", "bin", "channel",
                "currency"] | None = None
    by: Literal["card", "account", "device", "ip", "email", "merchant"]
    window: str = Field(description="1m to 90d: a number and m, h or d.")
    where: list[Condition] = Field(default_factory=list, max_length=MAX_FILTERS)
    current: bool = Field(default=True, description="Count the transaction itself.")

    @field_validator("window")
    @classmethod
    def _window(cls, value: str) -> str:
        if not re.fullmatch(r"[1-9]\d{0,5}[mhd]", value or ""):
            raise ValueError("Give a window as a number and m, h or d (10m, 1h, 30d).")
        if not MIN_WINDOW <= window_seconds(value) <= MAX_WINDOW:
            raise ValueError("A window is 1m to 90d.")
        return value

    @field_validator("where")
    @classmethod
    def _plain_filters(cls, value: list[Condition]) -> list[Condition]:
        for c in value:
            if c.field is None or c.than is not None:
                raise ValueError("A filter compares a field with a value (no aggregate in a filter).")
        return value

    @model_validator(mode="after")
    def _of_fits(self):
        if self.fn in ("sum", "avg") and self.of not in (None, "amount"):
            raise ValueError(f"{self.fn} is of amount; not {self.of}.")
        if self.fn == "count" and self.of is not None:
            raise ValueError("count counts transactions: leave out 'of' (count_distinct counts values).")
        if self.fn == "count_distinct" and self.of in (None, "amount"):
            raise ValueError(f"count_distinct needs 'of': one of {', '.join(DISTINCT)}.")
        return self

    @property
    def definition(self) -> dict:
        of = "amount" if self.fn in ("sum", "avg") else self.of
        return {"fn": self.fn, "of": of, "by": self.by, "window": self.window,
                "where": [c.dump() for c in self.where], "current": self.current}

    @property
    def key(self) -> str:
        """Names this aggregate in a transaction's snapshot (Transaction.aggregates)."""
        return _digest(self.definition)

    @property
    def series(self) -> dict:
        """What the counters it reads are kept for: the group, the filters, the distinct field."""
        return {"by": self.by, "where": [c.dump() for c in self.where],
                "of": self.of if self.fn == "count_distinct" else None}

    @property
    def series_key(self) -> str:
        return _digest(self.series)

    @property
    def seconds(self) -> int:
        return window_seconds(self.window)

    def describe(self) -> str:
        of = f"{self.of}, " if self.of and self.fn != "count" else ""
        where = f" where {describe([c.dump() for c in self.where])}" if self.where else ""
        current = "" if self.current else ", before this one"
        return f"{self.fn}({of}{self.by}, {self.window}{where}{current})"


class Scaled(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agg: Aggregate
    times: float = Field(default=1, gt=0, le=MAX_FACTOR)


class Condition(BaseModel):
    """A field or an aggregate (left), compared with a value or a scaled aggregate (right)."""

    model_config = ConfigDict(extra="forbid")

    field: Literal["amount", "hour", "mcc", "country", "channel", "currency", "auth_result", "three_ds", "avs",
                   "cvv", "bin", "merchant_id", "foreign"] | None = None
    agg: Aggregate | None = None
    op: Literal["gte", "lte", "gt", "lt", "eq", "in", "not_in"]
    value: Any = None
    than: Scaled | None = None

    @model_validator(mode="after")
    def _fits(self):
        if (self.field is None) == (self.agg is None):
            raise ValueError("Give either 'field' or 'agg'.")
        if (self.value is None) == (self.than is None):
            raise ValueError("Give either 'value' or 'than' (an aggregate times a factor).")
        kind = "number" if self.agg is not None else FIELDS[self.field]
        name = "an aggregate" if self.agg is not None else self.field
        if self.op not in OPS[kind]:
            raise ValueError(f"{name} takes the operators {', '.join(sorted(OPS[kind]))}; not {self.op}.")
        if self.than is not None:
            if kind != "number":
                raise ValueError(f"{name} is not a number: it cannot compare with an aggregate.")
            return self
        value = self.value
        if kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ValueError(f"{name} compares with a number.")
        if kind == "bool" and not isinstance(value, bool):
            raise ValueError(f"{name} is true or false.")
        if kind == "text":
            if self.op in ("in", "not_in"):
                if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"{name} {self.op} takes a non-empty list of strings.")
                if len(value) > MAX_LIST_VALUES:
                    raise ValueError(f"{name} {self.op} takes at most {MAX_LIST_VALUES} values.")
            elif not isinstance(value, str):
                raise ValueError(f"{name} eq takes a string.")
        return self

    def dump(self) -> dict:
        """The stored form: only the keys given (a plain condition keeps field, op, value)."""
        out: dict[str, Any] = {"field": self.field} if self.field else {"agg": self.agg.definition}
        out["op"] = self.op
        if self.than is not None:
            out["than"] = {"agg": self.than.agg.definition, "times": self.than.times}
        else:
            out["value"] = self.value
        return out

    def aggregates(self) -> list[Aggregate]:
        return [a for a in (self.agg, self.than.agg if self.than else None) if a is not None]


Aggregate.model_rebuild()


# The fields a list holds values of, and the row key each is read from.
LIST_FIELDS = {"card": "card_account", "email_hash": "email_hash", "ip": "ip_address", "device": "device_id",
               "merchant": "merchant_id", "bin": "bin"}


class ListCondition(BaseModel):
    """The transaction's value of `field` is on the list named `in_list` (unexpired)."""

    model_config = ConfigDict(extra="forbid")

    in_list: str = Field(min_length=1, max_length=60, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    field: Literal["card", "email_hash", "ip", "device", "merchant", "bin"]

    def dump(self) -> dict:
        return {"in_list": self.in_list, "field": self.field}

    def aggregates(self) -> list[Aggregate]:
        return []


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


def _digest(data: dict) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def parse(conditions) -> list[Condition | ListCondition]:
    """Stored conditions (dicts) as condition objects, each of its kind (field or aggregate:
    Condition; list membership: ListCondition). The one parser of the rule language."""
    return [c if isinstance(c, Condition | ListCondition)
            else (ListCondition if _kind(c) == "list" else Condition).model_validate(c) for c in conditions]


def aggregates_of(conditions: list[Condition | ListCondition]) -> list[Aggregate]:
    """The distinct aggregates these conditions read (by key)."""
    found = {}
    for condition in conditions:
        for agg in condition.aggregates():
            found.setdefault(agg.key, agg)
    return list(found.values())


def _compare(op: str, actual, value) -> bool:
    match op:
        case "gte":
            return actual >= value
        case "lte":
            return actual <= value
        case "gt":
            return actual > value
        case "lt":
            return actual < value
        case "eq":
            return actual == value
        case "in":
            return actual in value
        case "not_in":
            return actual not in value
    return False


def _holds(condition: Condition | ListCondition, row: dict, lists: ListMembership | None = None) -> bool:
    if isinstance(condition, ListCondition):
        value = row.get(LIST_FIELDS[condition.field]) or ""
        return bool(value) and lists is not None and lists.contains(condition.in_list, str(value))
    if condition.agg is not None:
        actual = (row.get("agg") or {}).get(condition.agg.key)
    else:
        actual = row[condition.field]
    if condition.than is not None:
        base = (row.get("agg") or {}).get(condition.than.agg.key)
        value = None if base is None else base * condition.than.times
    else:
        value = condition.value
    if actual is None or value is None:
        return False
    return _compare(condition.op, actual, value)


def holds_plain(condition: Condition, row: dict) -> bool:
    """A filter (a plain field condition) on a row."""
    return _holds(condition, row)


def rule_matches(conditions: list[Condition | ListCondition], row: dict, lists: ListMembership | None = None) -> bool:
    """All conditions hold. Aggregates are read from row["agg"] (key -> value), which the
    caller fills from the transaction's snapshot (casework.transactions.aggregates); list
    conditions ask `lists` (a ListLookup; none given: a list condition fails)."""
    return all(_holds(c, row, lists) for c in conditions)


def row_of(*, amount, mcc, country, channel, occurred_at, home_country, is_fraud=False, currency="",
           auth_result="", three_ds="", avs="", cvv="", bin="", merchant_id="", account=None, card_last4="",
           device_id="", ip_address=None, email_hash="", merchant="", card_account="") -> dict:  # noqa: A002
    return {"amount": float(amount), "mcc": mcc, "country": country, "channel": channel,
            "hour": occurred_at.hour, "foreign": country != home_country, "is_fraud": bool(is_fraud),
            "currency": currency, "auth_result": auth_result, "three_ds": three_ds, "avs": avs, "cvv": cvv,
            "bin": bin, "merchant_id": merchant_id,
            # What aggregates group and count by (casework.transactions.aggregates).
            "occurred_at": occurred_at, "account": None if account is None else str(account),
            "card": None if account is None else f"{account}:{card_last4}", "device_id": device_id or None,
            "ip_address": str(ip_address) if ip_address else None, "email_hash": email_hash or None,
            "merchant_key": merchant_id or (f"name:{merchant}" if merchant else None),
            # What a card list holds: the card account's own id (LIST_FIELDS).
            "card_account": card_account or None}


# The columns a rule reads, in row_of's order after the first six (for values_list).
ROW_COLUMNS = ("settlement_amount", "amount", "mcc", "country", "channel", "occurred_at", "account__home_country",
               "is_fraud", "currency", "auth_result", "three_ds_result", "avs_result", "cvv_result", "bin",
               "merchant_id", "account_id", "card_last4", "device_id", "ip_address", "email_hash", "merchant",
               "account__account_id")


def row_from_values(values) -> dict:
    """row_of over one values_list(*ROW_COLUMNS) tuple (the settlement amount when known)."""
    (settlement, amount, mcc, country, channel, occurred_at, home, is_fraud, currency, auth, three_ds, avs, cvv,
     bin_, merchant_id, account, last4, device, ip, email_hash, merchant, card_account) = values
    return row_of(amount=settlement if settlement is not None else amount, mcc=mcc, country=country,
                  channel=channel, occurred_at=occurred_at, home_country=home, is_fraud=is_fraud, currency=currency,
                  auth_result=auth, three_ds=three_ds, avs=avs, cvv=cvv, bin=bin_, merchant_id=merchant_id,
                  account=account, card_last4=last4, device_id=device, ip_address=ip, email_hash=email_hash,
                  merchant=merchant, card_account=card_account)


WORDS = {"gte": "≥", "lte": "≤", "gt": ">", "lt": "<", "eq": "=", "in": "in", "not_in": "not in"}


def describe(conditions: list[dict]) -> str:
    parts = []
    for c in conditions:
        try:
            parsed = parse([c])[0]
        except ValueError:
            parts.append(json.dumps(c))
            continue
        if isinstance(parsed, ListCondition):
            parts.append(f"{parsed.field} on list {parsed.in_list}")
            continue
        left = parsed.agg.describe() if parsed.agg is not None else parsed.field
        if parsed.than is not None:
            times = f"{parsed.than.times:g} × " if parsed.than.times != 1 else ""
            right = f"{times}{parsed.than.agg.describe()}"
        else:
            right = ", ".join(parsed.value) if isinstance(parsed.value, list) else parsed.value
        parts.append(f"{left} {WORDS.get(parsed.op, parsed.op)} {right}")
    return " and ".join(parts)


def explain(conditions: list[Condition | ListCondition], row: dict) -> str:
    """Why a rule matched a row: each condition with the values it compared
    ("count(card, 10m) = 7 ≥ 6 and amount = 1.0 ≤ 5"), for a hit's reason."""
    parts = []
    for c in conditions:
        if isinstance(c, ListCondition):
            parts.append(f"{c.field} = {row.get(LIST_FIELDS[c.field])} on list {c.in_list}")
            continue
        agg = row.get("agg") or {}
        left = f"{c.agg.describe()} = {agg.get(c.agg.key)}" if c.agg is not None else f"{c.field} = {row.get(c.field)}"
        if c.than is not None:
            base = agg.get(c.than.agg.key)
            times = f"{c.than.times:g} × " if c.than.times != 1 else ""
            right = f"{times}{c.than.agg.describe()} ({times}{base})"
        else:
            right = ", ".join(c.value) if isinstance(c.value, list) else c.value
        parts.append(f"{left} {WORDS.get(c.op, c.op)} {right}")
    return " and ".join(parts)
