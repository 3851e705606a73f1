"""List membership for one decision or one batch of transactions: every value the rows carry
is looked up once, in one query over the (value, list) index, and remembered; a rule's
`in_list` condition and the deny and allow lists then cost a set lookup each.

The cost per lookup does not grow with a list's size or with history: each value is one
index probe (ListEntry's index on (value, value_list)), and the answer is kept for the rest
of the request or batch, so fifty rules asking about one device make one probe."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from casework.transactions.rules import LIST_FIELDS


@dataclass(frozen=True)
class Listed:
    """A row's value found on a list."""

    name: str
    kind: str
    field: str
    value: str

    def as_hit(self) -> dict:
        verb = "deny list" if self.kind == "deny" else "allow list"
        return {"list": self.name, "kind": self.kind, "field": self.field, "value": self.value,
                "reason": f"{self.field} {self.value} is on the {verb} {self.name}"}


def _unexpired(now: datetime) -> Q:
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now)


def _entries_of(values: list[str], now: datetime) -> list[tuple[str, str, str, str]]:
    """(list name, kind, field, value) of the unexpired entries holding these values: one probe
    of the (value, list) index per value, in raw SQL (it runs on every decision)."""
    from django.db import connection

    from casework.transactions.lists.models import ListEntry, ValueList

    entries, lists = ListEntry._meta.db_table, ValueList._meta.db_table
    marks = ", ".join(["%s"] * len(values))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT l.name, l.kind, l.field, e.value FROM {entries} e JOIN {lists} l "
                       f"ON l.id = e.value_list_id WHERE e.value IN ({marks}) "
                       "AND (e.expires_at IS NULL OR e.expires_at > %s)",
                       [*values, connection.ops.adapt_datetimefield_value(now)])
        return cursor.fetchall()


class ListLookup:
    def __init__(self, *, now: datetime):
        self.now = now
        self._entries: set[Listed] = set()
        self._members: set[tuple[str, str]] = set()
        self._asked: set[str] = set()  # values already looked up (on every list)
        self.queries = 0

    @classmethod
    def for_rows(cls, rows: Iterable[dict], *, now: datetime) -> ListLookup:
        lookup = cls(now=now)
        lookup.prefetch(rows)
        return lookup

    def prefetch(self, rows: Iterable[dict]) -> None:
        """Look up every list value of these rows, in one query."""

        wanted = {(field, row.get(key) or "") for row in rows for field, key in LIST_FIELDS.items()}
        wanted = {(field, str(value)) for field, value in wanted if value}
        values = {value for _, value in wanted} - self._asked
        if not values:
            return
        self.queries += 1
        for name, kind, field, value in _entries_of(sorted(values), self.now):
            self._members.add((name, value))
            if (field, value) in wanted:
                self._entries.add(Listed(name, kind, field, value))
        self._asked |= values

    def contains(self, list_name: str, value: str) -> bool:
        value = str(value)
        if value not in self._asked:
            from casework.transactions.lists.models import ListEntry

            self.queries += 1
            for name in (ListEntry.objects.filter(_unexpired(self.now), value=value)
                         .values_list("value_list__name", flat=True)):
                self._members.add((name, value))
            self._asked.add(value)
        return (list_name, value) in self._members

    def listed(self, row: dict) -> list[Listed]:
        """The row's values on deny or allow lists (the lists' own field), deny first."""
        found = [e for e in self._entries if str(row.get(LIST_FIELDS[e.field]) or "") == e.value]
        return sorted(found, key=lambda e: (e.kind != "deny", e.name))
