"""Where personal data can be in the database, found from the models themselves, and the
pseudonymising of rows (casework.privacy.erasure).

Every installed model's text and JSON columns are candidates (`text_fields`), so that a case
type's own records are covered without this package naming them (DESIGN.md: the core never
imports a type). A model reaches a case when a chain of foreign keys leads to cases.Case
(`case_path`: a ticket's message through its ticket, an agent call through its run, a webhook
delivery through its event); its rows on the subject's cases are read and scrubbed whole, weak
patterns included, encrypted columns included (the ORM decrypts and re-encrypts them). Anywhere
else, a row is found by a database search for a strong identifier (`sweep`) and then scrubbed in
Python. An encrypted column cannot be searched by the database: its rows are read and decrypted
here, a chunk at a time, and searched in Python (`encrypted_matches`; the agents' runs and calls
are encrypted, and a fraud run quotes look-alike alerts of other customers). That reads the
whole of those tables once per erasure; bench/README.md has the cost.

Left out: the audit chain (its payloads are tombstoned, never edited: audit.erasure), the
access log (who read what: user names, case references, no subject data), the erasure requests
themselves, and Django's own bookkeeping (users, sessions, permissions, content types): a
subject's Casework account is deactivated and pseudonymised by the erasure's own step
(casework.people.services.user_pseudonymise), keeping its id for the audit trail.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from django.apps import apps
from django.db import models
from django.db.models import Q

from casework.privacy.scrub import Identifiers, scrub_all

SKIPPED_APPS = frozenset({"auth", "contenttypes", "sessions", "admin"})
SKIPPED_MODELS = frozenset({"audit.auditentry", "audit.accessentry", "privacy.erasurerequest", "entities.entity"})
MAX_HOPS = 3


@dataclass(frozen=True)
class Place:
    """A model with text columns: its label, the lookup from it to its case ("" when none), its
    text fields, which of those are encrypted, and which are unique."""

    model: type[models.Model]
    case_path: str
    fields: tuple[str, ...]
    encrypted: frozenset[str]
    unique: frozenset[str]
    max_length: tuple[tuple[str, int], ...]

    @property
    def label(self) -> str:
        return self.model._meta.label_lower

    @property
    def searchable(self) -> tuple[str, ...]:
        return tuple(f for f in self.fields if f not in self.encrypted)


def _is_text(f: models.Field) -> bool:
    return (isinstance(f, models.CharField | models.TextField | models.JSONField) and not f.primary_key
            and not f.choices and f.concrete)


def case_path(model: type[models.Model]) -> str:
    """The lookup from `model` to the case it belongs to ("pk" for a case; "" when no chain of at
    most MAX_HOPS non-reverse foreign keys reaches one). A field named `case` wins over other
    routes of the same length, and a required key wins over an optional one."""
    case_model = apps.get_model("cases", "Case")
    if model is case_model:
        return "pk"
    queue: deque[tuple[type[models.Model], str, int]] = deque([(model, "", 0)])
    seen = {model}
    while queue:
        current, prefix, hops = queue.popleft()
        fks = [f for f in current._meta.concrete_fields
               if f.is_relation and (f.many_to_one or f.one_to_one) and f.related_model is not None]
        # A required key before an optional one (a ticket's message belongs to its ticket's
        # case, whatever e-mail it went out in), then one named `case`.
        fks.sort(key=lambda f: (f.null, f.name != "case", f.name))
        for f in fks:
            if f.related_model is case_model:
                return f"{prefix}{f.name}"
        if hops + 1 >= MAX_HOPS:
            continue
        for f in fks:
            if f.related_model not in seen and f.related_model._meta.app_label not in SKIPPED_APPS:
                seen.add(f.related_model)
                queue.append((f.related_model, f"{prefix}{f.name}__", hops + 1))
    return ""


def _unique_fields(model: type[models.Model]) -> set[str]:
    unique = {f.name for f in model._meta.concrete_fields if f.unique}
    for constraint in model._meta.constraints:
        if isinstance(constraint, models.UniqueConstraint):
            unique |= set(constraint.fields)
    for together in model._meta.unique_together:
        unique |= set(together)
    return unique


@cache
def places() -> tuple[Place, ...]:
    """Every model that may hold personal data in a text or JSON column (module docstring)."""
    found = []
    for model in apps.get_models():
        meta = model._meta
        if meta.app_label in SKIPPED_APPS or meta.label_lower in SKIPPED_MODELS or meta.proxy or not meta.managed:
            continue
        fields = [f for f in meta.concrete_fields if _is_text(f)]
        if not fields:
            continue
        unique = _unique_fields(model)
        found.append(Place(
            model=model, case_path=case_path(model), fields=tuple(f.name for f in fields),
            encrypted=frozenset(f.name for f in fields if getattr(f, "encrypted", False)),
            unique=frozenset(f.name for f in fields if f.name in unique),
            max_length=tuple((f.name, f.max_length) for f in fields if getattr(f, "max_length", None))))
    return tuple(sorted(found, key=lambda p: p.label))


def _fit(place: Place, name: str, value, pk, ref: str):
    """A scrubbed value as its column takes it: a unique column gets a value of its own (two
    rows' pseudonyms must not collide), a bounded one is cut to its length."""
    if not isinstance(value, str):
        return value
    if name in place.unique:
        value = f"erased-{ref}-{pk}"
    limit = dict(place.max_length).get(name)
    return value[:limit] if limit else value


def scrub_rows(place: Place, rows: Iterable[dict], subjects: list[Identifiers], *, weak: bool,
               ref: str) -> tuple[int, set[str]]:
    """Scrub these rows (dicts of pk and the place's fields) and write the changed ones (one
    UPDATE per 500 rows); return how many changed and which fields."""
    changed: list[models.Model] = []
    fields: set[str] = set()
    for row in rows:
        values, touched = dict(row), False
        for name in place.fields:
            new, c = scrub_all(row[name], subjects, weak=weak)
            if c:
                values[name] = _fit(place, name, new, row["pk"], ref)
                fields.add(name)
                touched = True
        if touched:
            pk = values.pop("pk")
            changed.append(place.model(pk=pk, **values))
    if changed:
        # The changed rows' other scrubbed fields are written back as they were read.
        place.model._default_manager.bulk_update(changed, sorted(fields), batch_size=500)
    return len(changed), fields


def place_of(model: type[models.Model]) -> Place | None:
    return next((p for p in places() if p.model is model), None)


def case_rows(place: Place, case_ids: list[int]):
    """The place's rows on these cases."""
    return place.model._default_manager.filter(**{f"{place.case_path}__in": case_ids}).values(
        "pk", *place.fields).order_by("pk")


def _strings(value) -> Iterable[str]:
    """Every string in a decrypted value (a JSON document's keys and values, or a text)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def encrypted_matches(place: Place, terms: list[str], *, exclude_case_ids: list[int] = ()) -> list:
    """The primary keys of the place's rows (but those on the excluded cases) whose encrypted
    columns hold one of `terms` (as icontains would: case-insensitively), read and decrypted
    2,000 rows at a time."""
    encrypted = sorted(place.encrypted)
    if not encrypted or not terms:
        return []
    lowered = [t.lower() for t in terms]
    rows = place.model._default_manager.all()
    if place.case_path and exclude_case_ids:
        rows = rows.exclude(**{f"{place.case_path}__in": exclude_case_ids})
    found = []
    for pk, *values in rows.values_list("pk", *encrypted).order_by("pk").iterator(chunk_size=2000):
        if any(term in text.lower() for value in values for text in _strings(value) for term in lowered):
            found.append(pk)
    return found


def search_q(place: Place, terms: list[str], *, exclude_case_ids: list[int] = ()) -> Q | None:
    """Rows whose columns hold one of `terms`, without regard to case: the searchable ones by
    the database, the encrypted ones in Python (encrypted_matches)."""
    q = Q()
    for name in place.searchable:
        for term in terms:
            q |= Q(**{f"{name}__icontains": term})
    matched = encrypted_matches(place, terms, exclude_case_ids=exclude_case_ids)
    if matched:
        q |= Q(pk__in=matched)
    return q if q else None


def sweep(place: Place, subjects: list[Identifiers], *, exclude_case_ids: list[int],
          ref: str) -> tuple[int, set[str]]:
    """Find, anywhere in the place's table but on the excluded cases, rows holding a strong
    identifier of one of the subjects; scrub and write them (scrub_rows' answer)."""
    terms = sorted({t for ids in subjects for t in ids.search_terms()})
    q = search_q(place, terms, exclude_case_ids=exclude_case_ids) if terms else None
    if q is None:
        return 0, set()
    rows = place.model._default_manager.filter(q)
    if place.case_path and exclude_case_ids:
        rows = rows.exclude(**{f"{place.case_path}__in": exclude_case_ids})
    return scrub_rows(place, rows.values("pk", *place.fields).order_by("pk"), subjects, weak=False, ref=ref)


def held_subject_rows(place: Place, subjects: list[Identifiers]) -> int:
    """How many of the place's rows hold a strong identifier (for what a hold keeps)."""
    terms = sorted({t for ids in subjects for t in ids.search_terms()})
    q = search_q(place, terms) if terms else None
    return place.model._default_manager.filter(q).count() if q is not None else 0
