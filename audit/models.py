"""The append-only audit trail.

Entries form one hash chain, ordered by `position`: each entry's hash covers its own fields
and the previous entry's hash, so changing or removing any row breaks every hash after it
(`manage.py verify_audit_chain` finds the first break).

The chain is built like a transparency log (Trillian, Certificate Transparency): a writer
inserts its entry *pending* (no position, no hashes) inside its own transaction, taking no
lock, and a sequencer (`audit.services.audit_sequence`) later links the committed pending
entries in batches, writing each one's position, prev_hash and hash exactly once. Nothing
else updates or deletes an entry, and the database enforces that too: a trigger on PostgreSQL
(migrations 0002, 0003), two on SQLite (0004).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from django.db import connections, models
from django.db.models import Q


class AppendOnlyError(Exception):
    pass


# What an entry's hash covers, in this order (entry_hash): every column but the id and the three
# the sequencer writes.
HASHED_FIELDS = ("timestamp", "actor", "actor_type", "actor_user_id", "action", "case_id", "case_ref",
                 "object_type", "object_id", "correlation_id", "data")


def entry_hash(prev_hash: str, values: Sequence) -> str:
    """sha256(prev_hash + the entry's canonical JSON), from its HASHED_FIELDS values in order:
    what AuditEntry.compute_hash gives, for a row read as values (the sequencer reads its
    batch so, not as model instances: building those was half its CPU)."""
    return hashlib.sha256((prev_hash + canonical_json(values)).encode()).hexdigest()


def canonical_json(values: Sequence) -> str:
    """An entry's content as the hash sees it, from its HASHED_FIELDS values in order: sorted-key
    JSON, UTC ISO timestamp."""
    timestamp, *rest = values
    return json.dumps(
        {"timestamp": timestamp.isoformat(timespec="microseconds"), **dict(zip(HASHED_FIELDS[1:], rest, strict=True))},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )


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


class AuditEntry(models.Model):
    # SQLite's append-only trigger names every column but the three the sequencer writes
    # (migration 0004): a migration adding a column, or rebuilding the table (which drops its
    # triggers), must create the triggers again. tests/audit/test_sequencer.py checks both.

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
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Audit entries are append-only.")

    @property
    def sequenced(self) -> bool:
        """Whether the sequencer has linked this entry into the chain yet."""
        return self.position is not None

    def canonical(self) -> str:
        """The entry's content as the hash sees it: sorted-key JSON, UTC ISO timestamp."""
        return canonical_json([getattr(self, name) for name in HASHED_FIELDS])

    def compute_hash(self) -> str:
        """sha256(prev_hash + canonical()); the entry must have its prev_hash."""
        if self.prev_hash is None:
            raise ValueError(f"Audit entry #{self.pk} is pending: it has no prev_hash to hash with.")
        return entry_hash(self.prev_hash, [getattr(self, name) for name in HASHED_FIELDS])

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
