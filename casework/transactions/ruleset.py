"""The active rule versions, compiled once per process per rule set.

One small query per call reads which versions are active (id and creation time, in raw
SQL); that list is the rule set's version. The compiled
form (parsed conditions, the live rules in evaluation order, the aggregates every active
rule reads) is kept in the process for that version and rebuilt only when the list changes
(a version approved, rolled back or disabled). A version's conditions never change once
written (a change is a new version), so nothing else can make the compiled form stale.
"""

from __future__ import annotations

from dataclasses import dataclass

from casework.transactions import rules

# Allow rules first, then block rules, then review rules (see decisions/engine.py).
ACTION_ORDER = {"allow": 0, "block": 1, "review": 2}


@dataclass(frozen=True)
class CompiledRule:
    version_id: int
    rule: str
    number: int
    action: str
    mode: str
    conditions: list
    reason: str

    def as_hit(self, row: dict | None = None) -> dict:
        """The hit in a decision's answer: the reason names the values compared when the row is given."""
        reason = rules.explain(self.conditions, row) if row is not None else self.reason
        return {"rule": self.rule, "version": self.number, "action": self.action, "reason": reason}


@dataclass(frozen=True)
class RuleSet:
    ids: tuple  # the active versions' (id, creation time): the rule set's version
    live: tuple[CompiledRule, ...]  # in evaluation order
    shadow: tuple[CompiledRule, ...]
    aggregates: tuple[rules.Aggregate, ...]  # read by any active rule, one per key
    live_aggregates: tuple[rules.Aggregate, ...]  # read by the live rules


_CACHE: dict[str, RuleSet] = {}


def _compile(ids: tuple, key: tuple, conditions: dict[int, list]) -> RuleSet:
    compiled = []
    for pk, _created, name, number, action, mode in key:
        parsed = rules.parse(conditions[pk])
        compiled.append(CompiledRule(pk, name, number, action, mode, parsed, rules.describe(conditions[pk])))
    live = sorted((r for r in compiled if r.mode == "live"), key=lambda r: (ACTION_ORDER[r.action], r.rule))
    shadow = sorted((r for r in compiled if r.mode != "live"), key=lambda r: r.rule)
    every = rules.aggregates_of([c for r in compiled for c in r.conditions])
    read_live = rules.aggregates_of([c for r in live for c in r.conditions])
    return RuleSet(ids, tuple(live), tuple(shadow), tuple(every), tuple(read_live))


def active() -> RuleSet:
    """The active rule set (one query of a few integers; the versions are read and parsed
    only when the set changed)."""
    from django.db import connection

    from casework.transactions.monitoring.models import RuleVersion

    table = RuleVersion._meta.db_table
    with connection.cursor() as cursor:  # no ORM: this runs on every decision and every batch
        # The creation time too (as text: nothing to parse): a test database that rolls back
        # reuses ids (SQLite's sequence rolls back with the transaction).
        cursor.execute(f"SELECT id, CAST(created_at AS TEXT) FROM {table} WHERE status = %s ORDER BY id",
                       [RuleVersion.Status.ACTIVE])
        ids = tuple(cursor.fetchall())
    # Per database (a test run may switch between them) and per rule set.
    slot = connection.settings_dict.get("NAME") or ""
    cached = _CACHE.get(slot)
    if cached is not None and cached.ids == ids:
        return cached
    pks = [pk for pk, _created in ids]
    key = tuple(RuleVersion.objects.filter(pk__in=pks).order_by("pk")
                .values_list("pk", "created_at", "rule__name", "number", "action", "mode"))
    conditions = dict(RuleVersion.objects.filter(pk__in=pks).values_list("pk", "conditions"))
    _CACHE[slot] = ruleset = _compile(ids, key, conditions)
    return ruleset
