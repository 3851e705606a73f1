"""Writing, sequencing and verifying the audit trail.

Writers (`audit_record`, `audit_record_many`) insert entries *pending*, inside the caller's
transaction and without any lock, so concurrent writers never queue behind one another.
One sequencer at a time (`audit_sequence`, under the chain lock) links committed pending
entries into the hash chain in batches. After a commit that wrote entries, an on-commit hook
asks for a sequencing pass; settings.AUDIT_SEQUENCER says who runs it (see `_Sequencer`), and a
Celery beat task (`audit.tasks.audit_sequence_pending`) catches whatever is left.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connection, connections, models, transaction
from django.utils import timezone

from audit.context import get_correlation_id
from audit.models import CHAINED_FIELDS, SCHEME_FIELDS, AuditEntry, entry_hash
from audit.rowsql import rows_insert

logger = logging.getLogger(__name__)

GENESIS_HASH = "0" * 64
# Arbitrary constant key for pg_advisory_xact_lock: "casework audit chain head".
_CHAIN_LOCK_KEY = 0x41554449_54434841


def _actor_fields(actor: Any) -> tuple[str, str, int | None]:
    if actor is None or actor == "system":
        return "system", AuditEntry.ActorType.SYSTEM, None
    if isinstance(actor, str):
        if actor.startswith("agent:"):
            return actor, AuditEntry.ActorType.AGENT, None
        return actor, AuditEntry.ActorType.SYSTEM, None
    # A user (anything with a username and a pk).
    return actor.get_username(), AuditEntry.ActorType.USER, actor.pk


def audit_entry_build(
    *,
    actor: Any,
    action: str,
    case: Any = None,
    obj: models.Model | None = None,
    data: dict[str, Any] | None = None,
    correlation_id: str | None = None,
) -> AuditEntry:
    """An unsaved, pending entry, for `audit_record_many` to write with others in one INSERT.

    `actor` is a user, "agent:<name>" or "system". The timestamp is taken now, at build time;
    the salt and the payload's digest too (scheme 2, audit.models).
    """
    actor_name, actor_type, actor_user_id = _actor_fields(actor)
    # Round-trip through JSON so that what is stored is exactly what the hash will see.
    clean_data = json.loads(json.dumps(data or {}, cls=DjangoJSONEncoder))
    entry = AuditEntry(
        timestamp=timezone.now(),
        actor=actor_name[:150],
        actor_type=actor_type,
        actor_user_id=actor_user_id,
        action=action,
        case_id=getattr(case, "pk", None),
        case_ref=getattr(case, "reference", "") or "",
        object_type=obj._meta.label_lower if obj is not None else "",
        object_id=str(obj.pk) if obj is not None else "",
        correlation_id=correlation_id or get_correlation_id(),
        data=clean_data,
    )
    entry.seal()
    return entry


def audit_record(
    *,
    actor: Any,
    action: str,
    case: Any = None,
    obj: models.Model | None = None,
    data: dict[str, Any] | None = None,
    correlation_id: str | None = None,
) -> AuditEntry:
    """Append one entry to the audit trail, pending until the sequencer links it.

    `actor` is a user, "agent:<name>" or "system". Call it inside the service's transaction:
    the entry commits or rolls back with the change it describes. It takes no lock.
    """
    entry = audit_entry_build(actor=actor, action=action, case=case, obj=obj, data=data,
                              correlation_id=correlation_id)
    _insert_pending([entry])
    _sequence_after_this_commit()
    return entry


def audit_record_many(entries: list[AuditEntry]) -> list[AuditEntry]:
    """Insert entries made by `audit_entry_build` in one statement, in list order (ids ascend).

    For a caller that writes many entries at once, such as a pipeline stage's results.
    """
    if not entries:
        return []
    if any(not e._state.adding or e.position is not None for e in entries):
        raise ValueError("audit_record_many takes new, pending entries from audit_entry_build.")
    _insert_pending(entries)
    _sequence_after_this_commit()
    return entries


# What a pending entry is written with (its position and hashes stay NULL until the sequencer
# links it). Every change a service makes writes entries, a fraud alert's run a dozen in five
# INSERTs: through bulk_create each cost more CPU than the database's work on it
# (audit.rowsql builds the statement once).
_PENDING_FIELDS = ("timestamp", "actor", "actor_type", "actor_user_id", "action", "case_id", "case_ref",
                   "object_type", "object_id", "correlation_id", "data", "scheme", "salt", "payload_digest",
                   "tombstone")


def _insert_pending(entries: list[AuditEntry]) -> None:
    """INSERT the entries, in list order (ids ascend), and give each its id."""
    rows_insert(entries, _PENDING_FIELDS)


# --- Sequencing -------------------------------------------------------------------------


def _lock_chain_head() -> None:
    """Hold the chain lock until the surrounding transaction ends: one sequencer at a time.

    PostgreSQL: a transaction-scoped advisory lock. SQLite: the database's own write lock,
    which an IMMEDIATE transaction (our setting) already holds from BEGIN.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CHAIN_LOCK_KEY])


def _sequence_batch(batch_size: int) -> int:
    with transaction.atomic():
        _lock_chain_head()
        head = (AuditEntry.objects.filter(position__isnull=False).order_by("-position")
                .values_list("position", "hash").first())
        position, prev_hash = head or (0, GENESIS_HASH)
        # As values, not model instances (entry_hash hashes what compute_hash does). Every
        # pending entry is of scheme 2 (a constraint says so): the payload itself is not read,
        # only its digest.
        pending = (AuditEntry.objects.filter(position__isnull=True).order_by("id")
                   .values_list("id", *CHAINED_FIELDS)[:batch_size])
        rows = []
        for pk, *values in pending:
            position += 1
            hash_ = entry_hash(prev_hash, position, values)
            rows.append((pk, position, prev_hash, hash_))
            prev_hash = hash_
        written = AuditEntry.objects._sequence(rows)
        if written != len(rows):
            # Cannot happen while everyone takes the chain lock; roll the batch back if it does.
            raise RuntimeError(f"Audit sequencer wrote {written} of {len(rows)} entries; batch rolled back.")
        return written


def audit_sequence(*, batch_size: int = 1000) -> int:
    """Link every committed pending entry into the chain; return how many were linked.

    Steps, one transaction per batch so that the lock is held briefly:
    1. take the chain lock;
    2. read the head: the highest position and its hash (genesis: 0 and "0" * 64);
    3. read up to `batch_size` pending entries in id order;
    4. give each the next position, the previous entry's hash as prev_hash, and its own hash;
    5. write the batch with one UPDATE; commit. Repeat while a batch came back full.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1.")
    total = 0
    while True:
        written = _sequence_batch(batch_size)
        total += written
        if written < batch_size:
            return total


def audit_pending_count() -> int:
    """How many entries the sequencer has not linked yet."""
    return AuditEntry.objects.filter(position__isnull=True).count()


class _Sequencer:
    """Runs audit_sequence after commits, as settings.AUDIT_SEQUENCER says.

    background: one daemon thread per process waits on a condition. A commit only bumps a
    counter and notifies, so the writer's thread issues no SQL, and all the commits that land
    while a pass runs are covered by the next single pass. A failed pass is logged and retried
    after a growing pause; an idle thread closes its database connection.
    inline: the committing thread runs audit_sequence itself, right after its commit.
    off: nothing after commit; the beat task (audit.tasks.audit_sequence_pending) sequences.
    """

    idle_close_seconds = 10.0
    max_retry_delay = 30.0

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._pid = 0
        self._cond = threading.Condition()
        self._requested = 0  # wake-ups asked for
        self._served = 0  # wake-ups covered by a finished pass
        self._stopping = False
        self._thread: threading.Thread | None = None

    def wake(self) -> None:
        mode = settings.AUDIT_SEQUENCER
        if mode == "inline":
            self._run_inline()
        elif mode == "background":
            self._ensure_thread()
            with self._cond:
                self._requested += 1
                self._cond.notify()

    @staticmethod
    def _run_inline() -> None:
        try:
            audit_sequence()
        except Exception:  # noqa: BLE001 - the writer's commit is done; the next pass or the beat task retries
            logger.exception("Audit sequencing after commit failed; pending entries wait for the next pass.")

    def _alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._pid == os.getpid()

    def _ensure_thread(self) -> None:
        if self._alive():
            return
        with self._guard:
            if self._alive():
                return
            # A forked child (a Celery prefork worker) inherits the parent's objects, perhaps
            # a held lock among them, but not its thread: start afresh.
            self._pid = os.getpid()
            self._cond = threading.Condition()
            self._requested = self._served = 0
            self._stopping = False
            self._thread = threading.Thread(target=self._loop, name="audit-sequencer", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        delay = 0.0
        try:
            while True:
                with self._cond:
                    while self._served == self._requested and not self._stopping:
                        if not self._cond.wait(timeout=self.idle_close_seconds):
                            connection.close()  # idle: give the connection back
                    if self._stopping:
                        return
                # Let the commits of the next AUDIT_SEQUENCER_COALESCE_MS join this pass: under
                # load one pass then links dozens of entries instead of a handful (bench/).
                time.sleep(settings.AUDIT_SEQUENCER_COALESCE_MS / 1000)
                with self._cond:
                    target = self._requested
                try:
                    close_old_connections()
                    audit_sequence()
                except Exception:  # noqa: BLE001 - keep the thread alive; retry after a pause
                    delay = min(max(delay * 2, 0.5), self.max_retry_delay)
                    logger.exception("Audit sequencer pass failed; retrying in %.1f s.", delay)
                    connection.close()
                    with self._cond:
                        self._cond.wait_for(lambda: self._stopping, timeout=delay)
                    continue
                delay = 0.0
                with self._cond:
                    self._served = target
                    self._cond.notify_all()
        finally:
            connection.close()
            with self._cond:
                self._cond.notify_all()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until a pass has covered every wake-up asked for so far; True if one did."""
        if not self._alive():
            return True
        with self._cond:
            target = self._requested
            return self._cond.wait_for(lambda: self._served >= target or not self._alive(), timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Finish what was asked, stop the thread and close its connection (tests, exit)."""
        if not self._alive():
            return
        self.flush(timeout)
        thread = self._thread
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        thread.join(timeout)
        self._thread = None


_sequencer = _Sequencer()
# A short-lived process (a management command) should not leave its last entries for the
# beat task: let the background thread finish its pass before the interpreter exits.
atexit.register(_sequencer.flush, 5.0)


def _sequence_now() -> None:
    _sequencer.wake()


def _sequence_after_this_commit(using: str = DEFAULT_DB_ALIAS) -> None:
    """Ask for a sequencing pass once the current transaction commits, once per transaction.

    A transaction that writes ten entries registers one hook: the connection's pending
    on-commit list already holds it. (Django drops hooks of a rolled-back savepoint from that
    list, so a hook seen there will run if the entries just written commit.)
    """
    if settings.AUDIT_SEQUENCER == "off":
        return
    conn = connections[using]
    if conn.in_atomic_block and any(hook[1] is _sequence_now for hook in conn.run_on_commit):
        return
    transaction.on_commit(_sequence_now, using=using)


# --- Verifying --------------------------------------------------------------------------

# What an erasure's own entry is (audit.erasure writes it): it names the request whose tombstones
# audit_verify_chain accepts.
ERASURE_ACTION = "audit.entries_tombstoned"


def erasure_requests() -> set[str]:
    """The request references that erasure entries record (sequenced or pending)."""
    found = AuditEntry.objects.filter(action=ERASURE_ACTION).values_list("data", flat=True)
    return {str(data.get("request")) for data in found if isinstance(data, dict) and data.get("request")}



@dataclass(frozen=True)
class ChainCheck:
    """What audit_verify_chain found. Unpacks as (checked, broken, why), as callers did before
    pending entries existed; `pending` and `intact` are attributes."""

    checked: int
    broken: AuditEntry | None
    why: str
    pending: int

    @property
    def intact(self) -> bool:
        return self.broken is None

    def __iter__(self):
        return iter((self.checked, self.broken, self.why))

    def __getitem__(self, index):
        return (self.checked, self.broken, self.why)[index]

    def __len__(self) -> int:
        return 3


def audit_verify_chain() -> ChainCheck:
    """Walk the sequenced entries by position and check every link.

    Each entry's prev_hash must be the previous entry's hash (genesis: "0" * 64), its hash
    must match its content under its scheme, and positions must run 1, 2, 3 ... without a gap.
    Scheme 2: the payload of an entry that is not a tombstone must match its salted digest
    (recomputed); a tombstone's digest is trusted, and the request it names must be one an
    erasure entry records (audit.erasure). Pending entries are not part of the chain yet; they
    are only counted.
    """
    pending = audit_pending_count()
    expected_prev = GENESIS_HASH
    checked = 0
    requests: set[str] | None = None  # read once, at the first tombstone
    sequenced = AuditEntry.objects.filter(position__isnull=False).order_by("position")
    for entry in sequenced.iterator(chunk_size=2000):
        if entry.prev_hash != expected_prev:
            return ChainCheck(checked, entry, "its prev_hash does not match the previous entry's hash", pending)
        if entry.position != checked + 1:
            return ChainCheck(checked, entry, f"its position is {entry.position}, expected {checked + 1}", pending)
        if entry.scheme != SCHEME_FIELDS:
            if entry.tombstoned:
                if requests is None:
                    requests = erasure_requests()
                if entry.tombstone not in requests:
                    return ChainCheck(checked, entry, f"it is a tombstone of request {entry.tombstone!r}, which no "
                                                      "erasure entry records", pending)
            elif entry.compute_payload_digest() != entry.payload_digest:
                return ChainCheck(checked, entry, "its payload does not match its digest", pending)
        if entry.hash is None or entry.compute_hash() != entry.hash:
            return ChainCheck(checked, entry, "its content does not match its hash", pending)
        expected_prev = entry.hash
        checked += 1
    return ChainCheck(checked, None, "", pending)
