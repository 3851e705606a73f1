"""Turning what a case's record names into entities and mentions.

Each case type declares how its records yield entities (casework.cases.types.Entities,
registered from its AppConfig.ready); `entities_extract` runs it inside the caller's
transaction when a case is created or its named things change, and `entities_record` records
what an agent or a tool found. Both are idempotent: an entity is one row per (kind, value), a
mention one row per (entity, case); a second run adds only what is new. One round trip per
case on PostgreSQL, whatever it names, beside the type's read of its record
(bench/entities.py: what extraction adds to a case's creation).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from casework.cases.types import Found
from casework.entities.kinds import normalise
from casework.entities.models import Entity, Mention

logger = logging.getLogger(__name__)


def _normalised(found: Iterable[Found]) -> dict[tuple[str, str], tuple[str, str]]:
    """(kind, value) -> (display, source field), first source kept; a value the kind refuses
    (a malformed IP in a record) is left out, with a log line that does not repeat it."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for item in found:
        if not item.value:
            continue
        try:
            value, display = normalise(item.kind, item.value)
        except ValidationError:
            logger.info("entities: a %s in %s is not valid; not recorded", item.kind, item.source_field)
            continue
        out.setdefault((item.kind, value), (display, item.source_field))
    return out


Statement = tuple[str, list]


def _insert_entities(found: dict[tuple[str, str], tuple[str, str]], *, now) -> Statement:
    """The entities not yet known, inserted; one that exists (a merchant in every other case)
    is left alone: no row lock, no new row version, so two cases naming it never wait on
    each other (a concurrent insert of the same new one waits for the other to commit)."""
    quote = connection.ops.quote_name
    entity = Entity._meta
    columns = ", ".join(quote(entity.get_field(name).column) for name in ("kind", "value", "display", "created_at"))
    rows = ", ".join(["(%s, %s, %s, %s)"] * len(found))
    unique = ", ".join(quote(entity.get_field(name).column) for name in ("kind", "value"))
    sql = f"INSERT INTO {quote(entity.db_table)} ({columns}) VALUES {rows} ON CONFLICT ({unique}) DO NOTHING"
    return sql, [item for (kind, value), (display, _) in found.items() for item in (kind, value, display, now)]


def _insert_mentions(found: dict[tuple[str, str], tuple[str, str]], *, case_id: int, source_agent: str,
                     source_tool: str, now) -> Statement:
    """The case's mentions, inserted by the statement that looks up their entities' ids by
    (kind, value) (one probe of the unique index each): no round trip to read the ids back.
    An existing mention (entity, case) is kept as it is. Both databases name a VALUES list's
    columns column1, column2 ..., and SQLite wants the WHERE clause before ON CONFLICT in an
    INSERT ... SELECT."""
    quote = connection.ops.quote_name
    mention, entity = Mention._meta, Entity._meta
    column = {name: quote(mention.get_field(name).column) for name in
              ("entity", "case", "source_field", "source_agent", "source_tool", "created_at")}
    rows = ", ".join(["(%s, %s, %s)"] * len(found))
    sql = (f"INSERT INTO {quote(mention.db_table)} ({', '.join(column.values())}) "
           f"SELECT e.{quote(entity.pk.column)}, %s, v.column3, %s, %s, %s "
           f"FROM {quote(entity.db_table)} e, (VALUES {rows}) AS v "
           f"WHERE e.{quote(entity.get_field('kind').column)} = v.column1 "
           f"AND e.{quote(entity.get_field('value').column)} = v.column2 "
           f"ON CONFLICT ({column['entity']}, {column['case']}) DO NOTHING")
    params = [case_id, source_agent[:60], source_tool[:60], now]
    return sql, params + [item for (kind, value), (_, source) in found.items() for item in (kind, value, source[:60])]


def _one_text() -> bool:
    """Whether the statements go as one text of several (PostgreSQL with client-side binding,
    DB_SERVER_SIDE_BINDING=false): Django then logs them as one query."""
    return (connection.vendor == "postgresql"
            and connection.settings_dict.get("OPTIONS", {}).get("server_side_binding") is not True)


def _execute(statements: list[Statement]) -> None:
    """The statements in order, in one round trip on PostgreSQL (each still its own statement:
    the second sees what the first inserted, and what another transaction committed
    meanwhile). With server-side binding (our default, DB_SERVER_SIDE_BINDING) through
    psycopg's pipeline mode, which sends them together and waits once; with client-side
    binding, as one text of several statements. SQLite takes one a call, and runs in this
    process: there is no round trip to save."""
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            for sql, params in statements:
                cursor.execute(sql, params)
        elif _one_text():
            cursor.execute("; ".join(sql for sql, _ in statements), [p for _, params in statements for p in params])
        else:
            # Errors arrive when the pipeline syncs, at its exit: named as Django names them.
            with connection.wrap_database_errors, connection.connection.pipeline():
                for sql, params in statements:
                    cursor.execute(sql, params)


# No savepoint: inside the caller's transaction (a case's creation) a failure here fails the
# creation anyway, and a savepoint costs two more round trips per case.
@transaction.atomic(savepoint=False)
def entities_record(*, case, found: Iterable[Found], source_agent: str = "", source_tool: str = "") -> int:
    """Record the entities `found` as named by `case`; returns how many it names. Two
    statements whatever the count, sent in one round trip on PostgreSQL (none when nothing is
    found): insert the new entities, insert the new mentions with their entities' ids looked
    up in the same statement."""
    normalised = _normalised(found)
    if normalised:
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        _execute([_insert_entities(normalised, now=now),
                  _insert_mentions(normalised, case_id=case.pk, source_agent=source_agent, source_tool=source_tool,
                                   now=now)])
    return len(normalised)


def entities_extract(*, case) -> int:
    """What the case's type says its record names, recorded (nothing when the type declares
    no entities or the case has no record yet). Call it in the transaction that creates the
    case's record, and again when a named thing changes."""
    declared = case.type_info.entities
    if declared is None:
        return 0
    return entities_record(case=case, found=list(declared.extract(case)))
