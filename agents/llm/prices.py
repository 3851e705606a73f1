"""Prices per provider and model (settings.LLM_PRICES), and what a call costs or may cost.

LLM_PRICES is a table, per provider then model, of US$ per million tokens, input then output:
    {"openai": {"gpt-4o-mini": [0.15, 0.60]}, "anthropic": {"claude-sonnet-4-5": [3, 15]}}
A flat entry (`{"gpt-4o": [2.5, 10.0]}`, the table's form before it had providers) prices that
model whoever serves it. A model that is in neither costs nothing here: its calls still count
their tokens against a case's token budget (casework/budgets), never its money.

An answer may name a dated model ("gpt-4o-mini-2024-07-18") where the request named its alias:
the longest priced name the answer's starts with is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings

MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Price:
    provider: str
    model: str
    input_per_million: Decimal
    output_per_million: Decimal

    def cost(self, input_tokens: int, output_tokens: int) -> Decimal:
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / MILLION


_cache: tuple[int, dict] | None = None


def price_table() -> list[Price]:
    """Every priced (provider, model), flat entries under provider "*"; the admin shows this."""
    rows = []
    for key, value in settings.LLM_PRICES.items():
        if isinstance(value, dict):
            rows += [_price(key, model, pair) for model, pair in value.items()]
        else:
            rows.append(_price("*", key, value))
    return sorted(rows, key=lambda p: (p.provider, p.model))


def _price(provider: str, model: str, pair) -> Price:
    return Price(provider, model, Decimal(str(pair[0])), Decimal(str(pair[1])))


def _index() -> dict:
    """{(provider, model): Price}, rebuilt when the setting object changes (tests override it)."""
    global _cache
    table = settings.LLM_PRICES
    if _cache is None or _cache[0] != id(table):
        _cache = (id(table), {(p.provider, p.model): p for p in price_table()})
    return _cache[1]


def price_for(provider: str, model: str) -> Price | None:
    index = _index()
    found = index.get((provider, model)) or index.get(("*", model))
    if found is not None or not model:
        return found
    # A dated answer model: the longest priced name it starts with, this provider's first.
    for source in (provider, "*"):
        names = [m for (p, m) in index if p == source and model.startswith(m)]
        if names:
            return index[(source, max(names, key=len))]
    return None


def call_cost(provider: str, model: str, input_tokens: int, output_tokens: int) -> Decimal:
    price = price_for(provider, model)
    return price.cost(input_tokens, output_tokens) if price else Decimal(0)
