"""The append-only audit trail.

Entries form one hash chain, ordered by `position`: each entry's hash covers its own fields
and the previous entry's hash, so changing or removing any row breaks every hash after it
(`manage.py verify_audit_chain` finds the first break).

The chain is built like a transparency log (Trillian, Certificate Transparency): a writer
inserts its entry *pending* (no position, no hashes) inside its own transaction, taking no
lock, and a sequencer (`audit.services.audit_sequence`) later links the committed pending
entries in batches, writing each one's position, prev_hash and hash exactly once. Nothing
else updates or deletes an entry, but one thing: an erasure's tombstone (below). The database
enforces that too: a trigger on PostgreSQL, two on SQLite (migrations 0002 to 0004, 0009).

Two hashing schemes (`scheme`, issue 42):

- **2, salted payload digest** (every entry written since migration 0009). The personal part
  of an entry, its *payload* (PAYLOAD_FIELDS: who acted, by name and user id, and `data`), is
  committed to through `payload_digest = sha256(salt || canonical payload)`, with 16 random
  bytes of salt of its own (so that a digest cannot be confirmed by guessing a short payload).
  The chain hash covers that digest, the entry's position and its non-personal fields
  (CHAINED_FIELDS: when, the kind of actor, the action, the case and object it is about, the
  correlation id), never the payload itself. An erasure (`audit.erasure`) may therefore replace
  the payload by a tombstone (actor "[erased]", no user id, empty data, no salt, `tombstone` =
  the erasure request's reference) and keep the digest: the chain and every signed checkpoint
  still verify. `audit_verify_chain` recomputes the digest of every entry that is not a
  tombstone, so a payload changed any other way is still found; for a tombstone it trusts the
  stored digest, and asks that an erasure entry names its request.
- **1, fields hashed directly** (the entries sequenced before migration 0009): the hash covers
  V1_FIELDS, payload included, as it always did. Re-chaining them under scheme 2 would have
  changed every hash after the first and so contradicted every checkpoint already signed and
  published, which is exactly what a rewrite looks like. They keep their hashes and verify as
  before, and they cannot be tombstoned: their payload cannot go without breaking the chain.
  (Entries still pending when 0009 ran were given a salt and digest and joined scheme 2.)
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence

from django.db import connections, models
from django.db.models import Q


class AppendOnlyError(Exception):
    pass


SCHEME_FIELDS = 1  # the hash covers V1_FIELDS, payload included (entries sequenced before migration 0009)
SCHEME_SALTED = 2  # the hash covers CHAINED_FIELDS and the position; the payload through its salted digest

# Scheme 1: what an entry's hash covers, in this order (entry_hash_v1): every column there was
# then but the id and the three the sequencer writes.
V1_FIELDS = ("timestamp", "actor", "actor_type", "actor_user_id", "action", "case_id", "case_ref",
             "object_type", "object_id", "correlation_id", "data")
# Scheme 2: the personal part of an entry, committed to through payload_digest only, and what an
# erasure replaces by a tombstone.
PAYLOAD_FIELDS = ("actor", "actor_user_id", "data")
# Scheme 2: what the chain hash covers besides prev_hash and the position, in this order
# (entry_hash): the non-personal fields and the payload's digest.
CHAINED_FIELDS = ("timestamp", "actor_type", "action", "case_id", "case_ref", "object_type", "object_id",
                  "correlation_id", "payload_digest")
# A tombstone's payload (the trigger of migration 0009 allows exactly these values).
TOMBSTONE_ACTOR = "[erased]"
SALT_BYTES = 16


def entry_hash(prev_hash: str, position: int, values: Sequence) -> str:
    """Scheme 2: sha256(prev_hash + canonical JSON of the position and the CHAINED_FIELDS values,
    in order). What AuditEntry.compute_hash gives, for a row read as values (the sequencer reads
    its batch so, not as model instances: building those was half its CPU)."""
    timestamp, *rest = values
    text = json.dumps(
        {"v": SCHEME_SALTED, "position": position, "timestamp": timestamp.isoformat(timespec="microseconds"),
         **dict(zip(CHAINED_FIELDS[1:], rest, strict=True))},
        sort_keys=True, separators=(",", ":"), ensure_ascii=True,
    )
    return hashlib.sha256((prev_hash + text).encode()).hexdigest()


def entry_hash_v1(prev_hash: str, values: Sequence) -> str:
    """Scheme 1: sha256(prev_hash + the entry's canonical JSON), from its V1_FIELDS values in order."""
    return hashlib.sha256((prev_hash + canonical_json(values)).encode()).hexdigest()


def canonical_json(values: Sequence) -> str:
    """Scheme 1: an entry's content as the hash sees it, from its V1_FIELDS values in order:
    sorted-key JSON, UTC ISO timestamp."""
    timestamp, *rest = values
    return json.dumps(
        {"timestamp": timestamp.isoformat(timespec="microseconds"), **dict(zip(V1_FIELDS[1:], rest, strict=True))},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )


def payload_digest(salt: str, actor: str, actor_user_id: int | None, data) -> str:
    """sha256(salt || canonical payload): the salt's bytes (it is stored in hex), then the
    sorted-key JSON of PAYLOAD_FIELDS."""
    text = json.dumps({"actor": actor, "actor_user_id": actor_user_id, "data": data},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(bytes.fromhex(salt) + text.encode()).hexdigest()


class AuditEntryQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError("Audit entries are append-only.")

    def delete(self):
        raise AppendOnlyError("Audit entries are append-only.")

    def _sequence(self, rows: Sequence[tuple[int, int, str, str]]) -> int:
        """The sequencer's one-time write: set (position, prev_hash, hash) of pending entries.

        `rows` holds (id, position, prev_hash, hash). One UPDATE for the whole batch, joined to
        the batch's values (arrays on PostgreSQL, a VALUES list on SQLite), and only on rows
        still pending, so a row can never be sequenced twice. Returns how many rows changed.
        Only audit.services.audit_sequence calls this, holding the chain lock.
        """
        if not rows:
            return 0
        connection = connections[self.db]
        table = connection.ops.quote_name(self.model._meta.db_table)
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                # Four array parameters however big the batch: the statement text never changes,
                # and the driver does not parse thousands of placeholders.
                ids, positions, prev_hashes, hashes = (list(column) for column in zip(*rows, strict=True))
                cursor.execute(
                    f"UPDATE {table} AS a SET position = v.position, prev_hash = v.prev_hash, hash = v.hash "
                    "FROM unnest(%s::bigint[], %s::bigint[], %s::varchar[], %s::varchar[]) "
                    "AS v(id, position, prev_hash, hash) "
                    "WHERE a.id = v.id AND a.position IS NULL",
                    [ids, positions, prev_hashes, hashes],
                )
            elif connection.vendor == "sqlite":
                # SQLite (3.33+) names a VALUES list's columns column1, column2, ...
                values = ", ".join(["(%s, %s, %s, %s)"] * len(rows))
                cursor.execute(
                    f"UPDATE {table} SET position = v.column2, prev_hash = v.column3, hash = v.column4 "
                    f"FROM (VALUES {values}) AS v "
                    f"WHERE {table}.id = v.column1 AND {table}.position IS NULL",
                    [value for row in rows for value in row],
                )
            else:
                cursor.executemany(
                    f"UPDATE {table} SET position = %s, prev_hash = %s, hash = %s WHERE id = %s AND position IS NULL",
                    [(position, prev_hash, hash_) for _, position, prev_hash, hash_ in rows],
                )
            return cursor.rowcount

    # Underscored queryset methods are not copied onto the manager unless asked for.
    _sequence.queryset_only = False

    def _tombstone(self, ids: Sequence[int], request_ref: str) -> int:
        """An erasure's one write: replace the payload of these scheme-2 entries by a tombstone
        naming `request_ref`, and clear their salt; their digest, hashes and position stay.
        Entries already tombstoned are left as they are. Returns how many rows changed.
        Only audit.erasure.audit_entries_tombstone calls this (it also writes the audit entry)."""
        if not ids:
            return 0
        connection = connections[self.db]
        table = connection.ops.quote_name(self.model._meta.db_table)
        # The values are the trigger's (migration 0009): nothing else passes it.
        assignments = "actor = %s, actor_user_id = NULL, data = '{}', salt = '', tombstone = %s"
        changed = 0
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    f"UPDATE {table} SET {assignments} WHERE id = ANY(%s::bigint[]) AND scheme = %s AND tombstone = ''",
                    [TOMBSTONE_ACTOR, request_ref, list(ids), SCHEME_SALTED])
                return cursor.rowcount
            for start in range(0, len(ids), 500):
                chunk = list(ids[start:start + 500])
                marks = ", ".join(["%s"] * len(chunk))
                cursor.execute(
                    f"UPDATE {table} SET {assignments} WHERE id IN ({marks}) AND scheme = %s AND tombstone = ''",
                    [TOMBSTONE_ACTOR, request_ref, *chunk, SCHEME_SALTED])
                changed += cursor.rowcount
        return changed

    _tombstone.queryset_only = False


class AuditEntry(models.Model):
    # SQLite's append-only trigger names every column (migrations 0004, 0009): a migration adding
    # a column, or rebuilding the table (which drops its triggers), must create the triggers
    # again. tests/audit/test_sequencer.py and test_erasure.py check both.

    class ActorType(models.TextChoices):
        USER = "user", "User"
        AGENT = "agent", "Agent"
        SYSTEM = "system", "System"

    timestamp = models.DateTimeField(db_index=True)
    actor = models.CharField(max_length=150, help_text="Username, agent:<name>, or system.")
    actor_type = models.CharField(max_length=10, choices=ActorType.choices)
    actor_user_id = models.BigIntegerField(null=True, blank=True)
    action = models.CharField(max_length=80, db_index=True)
    # Plain columns rather than a foreign key: the audit app depends on nothing above it,
    # and an entry must outlive whatever it describes.
    case_id = models.BigIntegerField(null=True, blank=True)  # indexed by audit_entry_case_newest (leading column): no index of its own to update on every write
    case_ref = models.CharField(max_length=32, blank=True, db_index=True)
    object_type = models.CharField(max_length=80, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    correlation_id = models.CharField(max_length=64, blank=True, db_index=True)
    data = models.JSONField(default=dict, blank=True)
    # How the hash commits to the entry (module docstring): 1, its fields directly (entries
    # sequenced before migration 0009); 2, its payload through a salted digest.
    scheme = models.PositiveSmallIntegerField(default=SCHEME_SALTED, editable=False)
    # Scheme 2: hex of SALT_BYTES random bytes ("" once tombstoned) and sha256(salt || payload).
    salt = models.CharField(max_length=2 * SALT_BYTES, blank=True, default="", editable=False)
    payload_digest = models.CharField(max_length=64, blank=True, default="", editable=False)
    # The erasure request's reference once the payload was erased (audit.erasure); "" before.
    tombstone = models.CharField(max_length=64, blank=True, default="", editable=False)
    # Set once by the sequencer; NULL while the entry is pending. Positions run 1..N without
    # gaps; commit order, not id order, decides them.
    position = models.BigIntegerField(null=True, blank=True, unique=True, editable=False)
    prev_hash = models.CharField(max_length=64, null=True, blank=True, editable=False)
    hash = models.CharField(max_length=64, null=True, blank=True, unique=True, editable=False)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "audit entries"
        constraints = [
            # Pending (all three NULL) or sequenced (all three set): never half-linked.
            models.CheckConstraint(
                condition=Q(position__isnull=True, prev_hash__isnull=True, hash__isnull=True)
                | Q(position__gte=1, prev_hash__isnull=False, hash__isnull=False),
                name="audit_entry_pending_or_sequenced",
            ),
            # Scheme 1 only for entries sequenced before it ended, never salted or tombstoned;
            # scheme 2 always with its digest, and with its salt until tombstoned.
            models.CheckConstraint(
                condition=Q(scheme=SCHEME_FIELDS, position__isnull=False, salt="", payload_digest="", tombstone="")
                | (Q(scheme=SCHEME_SALTED) & ~Q(payload_digest="")
                   & ((Q(tombstone="") & ~Q(salt="")) | (~Q(tombstone="") & Q(salt="")))),
                name="audit_entry_scheme",
            ),
        ]
        indexes = [
            # The sequencer's scan: the few pending rows in id order, however long the chain.
            models.Index(fields=["id"], condition=Q(position__isnull=True), name="audit_entry_pending_idx"),
            # A case's timeline page: its newest entries before a cursor, however long its history.
            models.Index(fields=["case_id", "-id"], name="audit_entry_case_newest"),
            # Where a run the timeline page cut began (casework.cases.timeline): the run's
            # queued/attached entry by the run's id. Without it PostgreSQL walked every entry
            # with that action, 5 ms at 100,000 entries (bench/growth.py).
            models.Index(fields=["object_id"], name="audit_entry_run_start",
                         condition=Q(object_type="agents.agentrun",
                                     action__in=["agent.run_queued", "agent.run_attached"])),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.timestamp:%Y-%m-%d %H:%M:%S} {self.actor} {self.action}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError("Audit entries are append-only.")
        if self.scheme == SCHEME_SALTED and not self.payload_digest:
            self.seal()
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Audit entries are append-only.")

    def seal(self) -> None:
        """Give a new entry its salt and the digest of its payload (scheme 2). The payload must
        be what the database will return: JSON-clean data (audit_entry_build sees to it)."""
        self.scheme = SCHEME_SALTED
        self.salt = secrets.token_hex(SALT_BYTES)
        self.payload_digest = self.compute_payload_digest()

    def compute_payload_digest(self) -> str:
        return payload_digest(self.salt, self.actor, self.actor_user_id, self.data)

    @property
    def tombstoned(self) -> bool:
        """Whether an erasure replaced this entry's payload by a tombstone."""
        return bool(self.tombstone)

    @property
    def sequenced(self) -> bool:
        """Whether the sequencer has linked this entry into the chain yet."""
        return self.position is not None

    def compute_hash(self) -> str:
        """The entry's hash under its scheme, from its stored fields (scheme 2: from its stored
        payload_digest, which compute_payload_digest checks); the entry must be sequenced."""
        if self.prev_hash is None:
            raise ValueError(f"Audit entry #{self.pk} is pending: it has no prev_hash to hash with.")
        if self.scheme == SCHEME_FIELDS:
            return entry_hash_v1(self.prev_hash, [getattr(self, name) for name in V1_FIELDS])
        if self.position is None:
            raise ValueError(f"Audit entry #{self.pk} is pending: it has no position to hash with.")
        return entry_hash(self.prev_hash, self.position, [getattr(self, name) for name in CHAINED_FIELDS])

    @property
    def summary(self) -> str:
        return self.action.replace("_", " ").replace(".", ": ")


class AccessEntryQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError("Access entries are append-only.")

    def delete(self):
        raise AppendOnlyError("Access entries are append-only.")


class AccessEntry(models.Model):
    """One read of sensitive data: who opened which case (its page, a tab, its report, an
    attachment), entity or export, when, and through which path (audit.access).

    A log of its own beside the audit chain: reads are many times the writes (every tab of
    every case a person opens), they need no order among themselves, and the chain's sequencer
    links entries one by one. Append-only as the chain is: the model refuses changes and the
    database's triggers refuse UPDATE and DELETE (migration 0008)."""

    at = models.DateTimeField()
    user_id = models.BigIntegerField(null=True)
    username = models.CharField(max_length=150)
    # What was read: a case by reference (case_ref, and object_type "case"), or another object
    # (object_type "entity", "export", "attachment"...) with the case it belongs to, if any.
    case_ref = models.CharField(max_length=32, blank=True)
    object_type = models.CharField(max_length=40)
    object_id = models.CharField(max_length=64, blank=True)
    # The path: the URL's name ("cases:detail", "api:case-detail") or the export's name.
    via = models.CharField(max_length=100)
    path = models.CharField(max_length=300, blank=True)
    correlation_id = models.CharField(max_length=64, blank=True)

    objects = AccessEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "access entries"
        indexes = [
            # "Who looked at this case", newest first; and the export per case.
            models.Index(fields=["case_ref", "-at"], name="access_entry_case"),
            # The export per person.
            models.Index(fields=["user_id", "-at"], name="access_entry_user"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.username} read {self.object_type} {self.case_ref or self.object_id}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError("Access entries are append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Access entries are append-only.")
