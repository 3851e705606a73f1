"""`row_update`: `instance.save(update_fields=...)` for the hot paths, with the UPDATE built once.

Every status move writes its record and its case (casework.cases.lifecycle), several times per
fraud alert. Through Model.save each UPDATE went through the ORM's query building, which cost
a worker more CPU than the database's work on the row (bench/README.md, runtime_throughput).
Here the statement is built once per model and field list; each value still goes through its
field's pre_save (auto_now) and get_db_prep_save, as Model.save does. A model that has
pre_save or post_save receivers is saved through Model.save, so that they run.
"""

from __future__ import annotations

import functools

from django.db import DatabaseError, connection, models
from django.db.models import signals


@functools.lru_cache(maxsize=256)
def _update_sql(model: type[models.Model], fields: tuple[str, ...], vendor: str) -> str:
    qn = connection.ops.quote_name
    meta = model._meta
    assignments = ", ".join(f"{qn(meta.get_field(name).column)} = %s" for name in fields)
    return f"UPDATE {qn(meta.db_table)} SET {assignments} WHERE {qn(meta.pk.column)} = %s"


def row_update(instance: models.Model, fields: list[str] | tuple[str, ...]) -> None:
    """Write these fields of a saved instance (as save(update_fields=fields) does, without its
    signals when nothing listens to them); raises DatabaseError when no row was updated."""
    model = type(instance)
    if signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model):
        instance.save(update_fields=fields)
        return
    names = tuple(dict.fromkeys(fields))
    meta = instance._meta
    values = []
    for name in names:
        field = meta.get_field(name)
        values.append(field.get_db_prep_save(field.pre_save(instance, False), connection))
    with connection.cursor() as cursor:
        cursor.execute(_update_sql(model, names, connection.vendor), [*values, instance.pk])
        if cursor.rowcount != 1:
            raise DatabaseError("Save with update_fields did not affect any rows.")
