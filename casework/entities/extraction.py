"""Turning what a case's record names into entities and mentions.

Each case type declares how its records yield entities (casework.cases.types.Entities,
registered from its AppConfig.ready); `entities_extract` runs it inside the caller's
transaction when a case is created or its named things change, and `entities_record` records
what an agent or a tool found. Both are idempotent: an entity is one row per (kind, value), a
mention one row per (entity, case); a second run adds only what is new. Two round trips per
case, whatever it names (bench/entities.py: what extraction adds to a case's creation).
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


def _insert_entities(found: dict[tuple[str, str], tuple[str, str]]) -> None:
    """The entities not yet known, inserted; one that exists (a merchant in every other case)
    is left alone: no row lock, no new row version, so two cases naming it never wait on
    each other."""
    Entity.objects.bulk_create([Entity(kind=kind, value=value, display=display)
                                for (kind, value), (display, _) in found.items()], ignore_conflicts=True)


def _insert_mentions(found: dict[tuple[str, str], tuple[str, str]], *, case_id: int, source_agent: str,
                     source_tool: str) -> None:
    """The case's mentions, inserted in the statement that looks up their entities' ids by
    (kind, value) (one probe of the unique index each): no round trip to read the ids back.
    An existing mention (entity, case) is kept as it is. The same SQL on SQLite and
    PostgreSQL: both name a VALUES list's columns column1, column2 ..., and SQLite wants the
    WHERE clause before ON CONFLICT in an INSERT ... SELECT."""
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
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    params = [case_id, source_agent[:60], source_tool[:60], now]
    params += [item for (kind, value), (_, source) in found.items() for item in (kind, value, source[:60])]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


# No savepoint: inside the caller's transaction (a case's creation) a failure here fails the
# creation anyway, and a savepoint costs two more round trips per case.
@transaction.atomic(savepoint=False)
def entities_record(*, case, found: Iterable[Found], source_agent: str = "", source_tool: str = "") -> int:
    """Record the entities `found` as named by `case`; returns how many it names. Two queries
    whatever the count (none when nothing is found): insert the new entities, insert the new
    mentions with their entities' ids looked up in the same statement."""
    normalised = _normalised(found)
    if normalised:
        _insert_entities(normalised)
        _insert_mentions(normalised, case_id=case.pk, source_agent=source_agent, source_tool=source_tool)
    return len(normalised)


def entities_extract(*, case) -> int:
    """What the case's type says its record names, recorded (nothing when the type declares
    no entities or the case has no record yet). Call it in the transaction that creates the
    case's record, and again when a named thing changes."""
    declared = case.type_info.entities
    if declared is None:
        return 0
    return entities_record(case=case, found=list(declared.extract(case)))
