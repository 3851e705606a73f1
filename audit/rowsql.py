"""Reads and writes on the hot paths with their SQL built once: `row_get` (a queryset's
.get(pk=...), e.g. a lifecycle move's locking SELECT), `row_update` (save(update_fields=...))
and `rows_insert` (bulk_create).

Every status move writes its record and its case (casework.cases.lifecycle), every step of a
run its calls and audit entries, several times per fraud alert. Through the ORM each statement
went through its query building, which cost a worker more CPU than the database's work on the
rows (bench/README.md, runtime_throughput). Here a statement is built once per model and field
list (and row count); each value still goes through its field's pre_save (auto_now,
auto_now_add) and get_db_prep_save, as the ORM's INSERT and UPDATE do. An update of a model
with pre_save or post_save receivers, a field with a database default, or a value that is an
expression takes the ORM's way, so nothing the ORM would do is skipped.

In `audit`, the layer that depends on nothing above it: the audit trail, the runtime
(agents.runtime) and the domain (casework) all write through it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, models
from django.db.models import signals
from django.db.models.query import QuerySet, get_related_populators
from django.db.transaction import TransactionManagementError


def _db():
    """The thread's connection itself: `django.db.connection` is a proxy whose every attribute
    is a lookup in asgiref's context-local storage (1 to 2 us), and a row's values pass it to
    each field's get_db_prep_save."""
    return connections[DEFAULT_DB_ALIAS]


# A primary key no row has: its place among a compiled query's parameters is the pk's.
_PK_SENTINEL = -7_392_481_905_123
# Compiled statements, per process: a statement's text, its row decoding and its converters do
# not depend on which thread's connection compiled it (each thread still executes on its own
# connection). Per thread, each of a worker's 32 threads compiled every statement again on its
# first runs: 2% of a worker's CPU in a 400-alert trial (bench/README.md, issue 29).
_compiled: dict[Hashable, object] = {}


class _Compiled:
    """A queryset's SELECT compiled once: its SQL and parameters (the pk's place in them) and
    what turns a row into the model instance and its select_related ones, as ModelIterable does."""

    def __init__(self, queryset: QuerySet, *, by: str | None):
        query = (queryset.filter(**{by: _PK_SENTINEL}) if by else queryset).query
        compiler = query.get_compiler(using=queryset.db)
        self.sql, params = compiler.as_sql()
        if compiler.annotation_col_map or (by and list(params) != [_PK_SENTINEL]):
            raise ValueError(f"the queryset must annotate nothing{f' and filter on nothing but {by}' if by else ''}")
        self.params = list(params)
        self.model, self.db = queryset.model, queryset.db
        self.locking = query.select_for_update
        select, klass_info = compiler.select, compiler.klass_info
        fields = klass_info["select_fields"]
        self.start, self.end = fields[0], fields[-1] + 1
        self.init_list = [f[0].target.attname for f in select[self.start:self.end]]
        self.populators = get_related_populators(klass_info, select, self.db)
        self.compiler = compiler
        self.converters = compiler.get_converters([s[0] for s in select[0:compiler.col_count]])


def _held(key: Hashable, make: Callable):
    """The process's compiled statement for `key`, made on first use (two threads making it at
    once make the same thing; either is kept)."""
    found = _compiled.get(key)
    if found is None:
        found = _compiled[key] = make()
    return found


def _compiled_for(shape: Hashable, build: Callable[[], QuerySet], *, by: str | None) -> _Compiled:
    compiled = _held(("rows", shape), lambda: _Compiled(build(), by=by))
    if compiled.locking and _db().get_autocommit():
        raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
    return compiled


def _objects(compiled: _Compiled, params: list) -> list[models.Model]:
    with _db().cursor() as cursor:
        cursor.execute(compiled.sql, params)
        rows = cursor.fetchall()
    if rows and compiled.converters:
        rows = list(compiled.compiler.apply_converters(rows, compiled.converters))
    objs = []
    for row in rows:
        obj = compiled.model.from_db(compiled.db, compiled.init_list, row[compiled.start:compiled.end])
        for populator in compiled.populators:
            populator.populate(row, obj)
        objs.append(obj)
    return objs


def row_get(shape: Hashable, build: Callable[[], QuerySet], value, *, by: str = "pk") -> models.Model:
    """`build().get(**{by: value})` with the SELECT compiled once per `shape` (a key naming
    what build returns and `by`) and process: for querysets read on every step or move, whose
    query building cost a worker more CPU than the database's work. `by`: the primary key, a
    unique field or a one-to-one relation. The queryset may select_related and
    select_for_update (then inside a transaction, as the ORM requires), not annotate or filter
    on anything else. Raises the model's DoesNotExist."""
    compiled = _compiled_for(shape, build, by=by)
    field = compiled.model._meta.pk if by == "pk" else compiled.model._meta.get_field(by)
    value = getattr(value, "pk", value)  # a related instance stands for its key
    objs = _objects(compiled, [field.target_field.get_db_prep_value(value, _db()) if field.is_relation
                               else field.get_db_prep_value(value, _db())])
    if not objs:
        raise compiled.model.DoesNotExist(f"{compiled.model._meta.object_name} matching query does not exist.")
    return objs[0]


def rows_all(shape: Hashable, build: Callable[[], QuerySet]) -> list[models.Model]:
    """`list(build())`, compiled once per `shape` and process as row_get is: for a fixed
    queryset (its filter values are compiled in) read on every run."""
    compiled = _compiled_for(shape, build, by=None)
    return _objects(compiled, compiled.params)


def values_in(shape: Hashable, build: Callable[[], QuerySet], field: str, keys) -> list[tuple]:
    """`list(build().filter(**{field + "__in": keys}))` for a values_list queryset, compiled once
    per `shape`, process and number of keys (integer keys: ids): for the small reads every run
    makes by a handful of ids. Rows come back as values_list gives them (through the fields'
    converters: a datetime is aware on SQLite too)."""
    keys = list(keys)
    if not keys:
        return []

    def make():
        sentinels = [_PK_SENTINEL - i for i in range(len(keys))]
        queryset = build().filter(**{f"{field}__in": sentinels})
        compiler = queryset.query.get_compiler(using=queryset.db)
        sql, params = compiler.as_sql()
        places = [i for i, p in enumerate(params) if p in sentinels]
        if len(places) != len(keys):
            raise ValueError(f"values_in: {field}__in did not compile to one parameter per key")
        fields = [s[0] for s in compiler.select[0:compiler.col_count]]
        return sql, list(params), places, compiler, compiler.get_converters(fields)

    db = _db()
    sql, params, places, compiler, converters = _held(("values", shape, len(keys)), make)
    params = list(params)
    for place, value in zip(places, keys, strict=True):
        params[place] = value
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if rows and converters:
        rows = [tuple(row) for row in compiler.apply_converters(rows, converters)]
    return rows


@functools.lru_cache(maxsize=256)
def _update_sql(model: type[models.Model], fields: tuple[str, ...], vendor: str) -> str:
    qn = connection.ops.quote_name
    meta = model._meta
    assignments = ", ".join(f"{qn(meta.get_field(name).column)} = %s" for name in fields)
    return f"UPDATE {qn(meta.db_table)} SET {assignments} WHERE {qn(meta.pk.column)} = %s"


def _has_receivers(model: type[models.Model]) -> bool:
    return signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model)


def row_update(instance: models.Model, fields: list[str] | tuple[str, ...]) -> None:
    """Write these fields of a saved instance (as save(update_fields=fields) does, without its
    signals when nothing listens to them); raises DatabaseError when no row was updated."""
    model = type(instance)
    names = tuple(dict.fromkeys(fields))
    meta = instance._meta
    values = []
    for name in names:
        field = meta.get_field(name)
        values.append(field.pre_save(instance, False))
    if _has_receivers(model) or any(hasattr(v, "resolve_expression") for v in values):
        instance.save(update_fields=fields)
        return
    db = _db()
    values = [meta.get_field(name).get_db_prep_save(v, db) for name, v in zip(names, values, strict=True)]
    with db.cursor() as cursor:
        cursor.execute(_update_sql(model, names, db.vendor), [*values, instance.pk])
        if cursor.rowcount != 1:
            raise DatabaseError("Save with update_fields did not affect any rows.")


# Rows per INSERT: at most 500 x 22 parameters, under SQLite's limit of 32,766.
INSERT_CHUNK = 500


@functools.lru_cache(maxsize=256)
def _insert_sql(model: type[models.Model], fields: tuple[str, ...], rows: int, vendor: str) -> str:
    qn = connection.ops.quote_name
    meta = model._meta
    columns = ", ".join(qn(meta.get_field(name).column) for name in fields)
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    return (f"INSERT INTO {qn(meta.db_table)} ({columns}) VALUES {', '.join([one] * rows)} "
            f"RETURNING {qn(meta.pk.column)}")


def _insert_fields(model: type[models.Model]) -> tuple[str, ...]:
    return tuple(f.name for f in model._meta.concrete_fields if not f.primary_key)


def rows_insert(objs: list[models.Model], fields: tuple[str, ...] | None = None) -> list[models.Model]:
    """INSERT new instances of one model (bulk_create without its options), `fields` (default
    every concrete field but the primary key) in list order; each instance gets its id."""
    if not objs:
        return objs
    model = type(objs[0])
    meta = model._meta
    fields = fields or _insert_fields(model)
    db_defaults = any(meta.get_field(name).has_db_default() for name in fields)
    # (bulk_create sends no save signals either.)
    db = _db()
    if db_defaults or not db.features.can_return_rows_from_bulk_insert:
        return model.objects.bulk_create(objs)
    prepared = [(meta.get_field(name), name) for name in fields]
    rows = [[field.pre_save(obj, True) for field, _ in prepared] for obj in objs]
    if any(hasattr(v, "resolve_expression") for row in rows for v in row):
        return model.objects.bulk_create(objs)
    for start in range(0, len(objs), INSERT_CHUNK):
        chunk = objs[start:start + INSERT_CHUNK]
        params = [field.get_db_prep_save(value, db)
                  for row in rows[start:start + INSERT_CHUNK] for (field, _), value in zip(prepared, row, strict=True)]
        with db.cursor() as cursor:
            cursor.execute(_insert_sql(model, fields, len(chunk), db.vendor), params)
            ids = sorted(row[0] for row in cursor.fetchall())  # ids ascend in list order
        for obj, pk in zip(chunk, ids, strict=True):
            obj.pk = pk
            obj._state.adding = False
            obj._state.db = db.alias
    return objs
