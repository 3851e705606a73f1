"""Turning what a case's record names into entities and mentions.

Each case type declares how its records yield entities (casework.cases.types.Entities,
registered from its AppConfig.ready); `entities_extract` runs it inside the caller's
transaction when a case is created or its named things change, and `entities_record` records
what an agent or a tool found. Both are idempotent: an entity is one row per (kind, value), a
mention one row per (entity, case); a second run adds only what is new.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q

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


def _upsert(found: dict[tuple[str, str], tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The entities' ids, inserting the new ones: two queries whatever the count, and no row
    lock on an entity that exists already (a merchant in every other case)."""
    if not found:
        return {}
    Entity.objects.bulk_create([Entity(kind=kind, value=value, display=display)
                                for (kind, value), (display, _) in found.items()], ignore_conflicts=True)
    # Both columns, so that each pair is one probe of the (kind, value) unique index.
    pairs = Q()
    for kind, value in found:
        pairs |= Q(kind=kind, value=value)
    rows = Entity.objects.filter(pairs).values_list("kind", "value", "id")
    return {(kind, value): pk for kind, value, pk in rows}


@transaction.atomic
def entities_record(*, case, found: Iterable[Found], source_agent: str = "", source_tool: str = "") -> int:
    """Record the entities `found` as named by `case`; returns how many it named (three
    queries: insert the new entities, read their ids, insert the new mentions)."""
    normalised = _normalised(found)
    ids = _upsert(normalised)
    mentions = [Mention(entity_id=ids[key], case_id=case.pk, source_field=source[:60],
                        source_agent=source_agent[:60], source_tool=source_tool[:60])
                for key, (_, source) in normalised.items() if key in ids]
    if mentions:
        Mention.objects.bulk_create(mentions, ignore_conflicts=True)
    return len(mentions)


def entities_extract(*, case) -> int:
    """What the case's type says its record names, recorded (nothing when the type declares
    no entities or the case has no record yet). Call it in the transaction that creates the
    case's record, and again when a named thing changes."""
    declared = case.type_info.entities
    if declared is None:
        return 0
    return entities_record(case=case, found=list(declared.extract(case)))
