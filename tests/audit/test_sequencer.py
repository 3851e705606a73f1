"""Writers append audit entries pending and take no lock; the sequencer links them into the
chain in batches after commit; the database refuses every other change."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import AuditEntry
from audit.services import (
    GENESIS_HASH,
    _sequence_now,
    _sequencer,
    audit_entry_build,
    audit_pending_count,
    audit_record,
    audit_record_many,
    audit_sequence,
    audit_verify_chain,
)
from audit.tasks import audit_sequence_pending
from tests.audit.guard import behind_the_codes_back, guard_in_place


def _record(n: int, action: str = "test.event") -> list[AuditEntry]:
    return [audit_record(actor="system", action=action, data={"i": i}) for i in range(n)]


def _our_hooks(callbacks) -> int:
    return sum(1 for c in callbacks if c is _sequence_now)


def _tamper(sql: str, params: list) -> None:
    with behind_the_codes_back() as cursor:
        cursor.execute(sql, params)


# --- Writing ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_entry_is_written_pending_with_one_insert_and_no_lock():
    with CaptureQueriesContext(connection) as ctx, transaction.atomic():
        entry = audit_record(actor="system", action="case.created", data={"n": 1})

    sql = [q["sql"] for q in ctx.captured_queries]
    assert not any("advisory" in s.lower() for s in sql), sql
    assert sum(s.lstrip().upper().startswith("INSERT") for s in sql) == 1, sql
    assert not any(s.lstrip().upper().startswith(("SELECT", "UPDATE")) for s in sql), sql
    entry.refresh_from_db()
    assert not entry.sequenced
    assert (entry.position, entry.prev_hash, entry.hash) == (None, None, None)
    assert audit_pending_count() == 1


@pytest.mark.django_db
def test_audit_record_many_writes_a_stages_entries_in_one_insert():
    built = [audit_entry_build(actor="agent:geo", action="agent.call_completed", data={"i": i})
             for i in range(20)]
    assert all(e.pk is None for e in built)

    with CaptureQueriesContext(connection) as ctx, transaction.atomic():
        created = audit_record_many(built)

    inserts = [q for q in ctx.captured_queries if q["sql"].lstrip().upper().startswith("INSERT")]
    assert len(inserts) == 1
    assert [e.pk for e in created] == sorted(e.pk for e in created)
    # Each entry has the id of its own row: ids ascend in list order.
    stored = dict(AuditEntry.objects.filter(pk__in=[e.pk for e in created]).values_list("pk", "data"))
    assert [stored[e.pk]["i"] for e in created] == list(range(20))
    assert all(not e._state.adding for e in created)
    assert AuditEntry.objects.filter(actor="agent:geo", position__isnull=True).count() == 20
    assert audit_record_many([]) == []


@pytest.mark.django_db
def test_audit_entry_build_fills_the_same_fields_as_audit_record(alice):
    built = audit_entry_build(actor=alice, action="case.commented", obj=alice,
                              data={"when": "2026-01-01"}, correlation_id="abc")
    recorded = audit_record(actor=alice, action="case.commented", obj=alice,
                            data={"when": "2026-01-01"}, correlation_id="abc")
    fields = ["actor", "actor_type", "actor_user_id", "action", "object_type", "object_id",
              "correlation_id", "data"]
    assert [getattr(built, f) for f in fields] == [getattr(recorded, f) for f in fields]


@pytest.mark.django_db
def test_audit_record_many_refuses_entries_already_saved():
    (entry,) = _record(1)
    with pytest.raises(ValueError, match="new, pending entries"):
        audit_record_many([entry])


@pytest.mark.django_db
def test_a_transaction_with_many_entries_registers_one_on_commit_hook(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks, transaction.atomic():
        _record(10)
        audit_record_many([audit_entry_build(actor="system", action="bulk") for _ in range(5)])
    assert _our_hooks(callbacks) == 1


@pytest.mark.django_db
def test_a_rolled_back_savepoint_does_not_swallow_the_hook(django_capture_on_commit_callbacks):
    """The hook registered inside a savepoint that rolls back goes with it; the next entry of
    the surrounding transaction must register its own."""
    with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
        try:
            with transaction.atomic():
                audit_record(actor="system", action="lost")
                raise RuntimeError("roll the savepoint back")
        except RuntimeError:
            pass
        audit_record(actor="system", action="kept")

    assert _our_hooks(callbacks) == 1
    assert list(AuditEntry.objects.values_list("action", "position")) == [("kept", 1)]


# --- Sequencing -------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_sequencer_links_pending_entries_in_batches():
    audit_record_many([audit_entry_build(actor="system", action="bulk", data={"i": i}) for i in range(2500)])

    with CaptureQueriesContext(connection) as ctx:
        assert audit_sequence(batch_size=1000) == 2500

    updates = [q for q in ctx.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")]
    assert len(updates) == 3  # 1000 + 1000 + 500, one statement each
    positions = list(AuditEntry.objects.order_by("id").values_list("position", flat=True))
    assert positions == list(range(1, 2501))
    check = audit_verify_chain()
    assert (check.checked, check.broken, check.pending) == (2500, None, 0)
    assert audit_sequence() == 0


@pytest.mark.django_db
def test_the_sequencer_continues_the_chain_from_its_head():
    first = _record(3)
    assert audit_sequence() == 3
    second = _record(2)
    assert audit_sequence() == 2

    entries = {e.pk: e for e in AuditEntry.objects.all()}
    head_before = entries[first[-1].pk]
    nxt = entries[second[0].pk]
    assert (head_before.position, nxt.position) == (3, 4)
    assert nxt.prev_hash == head_before.hash
    assert entries[first[0].pk].prev_hash == GENESIS_HASH
    assert all(e.hash == e.compute_hash() for e in entries.values())
    assert audit_verify_chain().checked == 5


@pytest.mark.django_db
def test_the_sequencer_takes_the_chain_lock_on_postgresql():
    _record(2)
    with CaptureQueriesContext(connection) as ctx:
        audit_sequence()
    locked = any("pg_advisory_xact_lock" in q["sql"] for q in ctx.captured_queries)
    assert locked == (connection.vendor == "postgresql")


@pytest.mark.django_db
def test_the_hash_is_the_one_audit_models_describes():
    """Scheme 2, by hand: payload_digest = sha256(salt || sorted-key JSON of actor, user id and
    data); hash = sha256(prev_hash + sorted-key JSON of the position, the non-personal fields
    and the digest). The sequencer's hash is that one."""
    import hashlib

    (entry,) = _record(1)
    audit_sequence()
    stored = AuditEntry.objects.get(pk=entry.pk)
    assert (stored.scheme, len(stored.salt)) == (2, 32)
    payload = json.dumps({"actor": "system", "actor_user_id": None, "data": {"i": 0}}, sort_keys=True,
                         separators=(",", ":"))
    assert stored.payload_digest == hashlib.sha256(bytes.fromhex(stored.salt) + payload.encode()).hexdigest()
    chained = json.dumps({
        "v": 2, "position": 1, "timestamp": stored.timestamp.isoformat(timespec="microseconds"),
        "actor_type": "system", "action": "test.event", "case_id": None, "case_ref": "", "object_type": "",
        "object_id": "", "correlation_id": stored.correlation_id, "payload_digest": stored.payload_digest,
    }, sort_keys=True, separators=(",", ":"))
    assert stored.hash == hashlib.sha256((GENESIS_HASH + chained).encode()).hexdigest()


@pytest.mark.django_db
def test_an_entry_of_a_rolled_back_transaction_leaves_no_gap():
    _record(1)
    with pytest.raises(RuntimeError), transaction.atomic():
        _record(1, action="rolled.back")
        raise RuntimeError("the service failed")
    _record(1)
    assert audit_sequence() == 2
    assert list(AuditEntry.objects.order_by("position").values_list("position", flat=True)) == [1, 2]


@pytest.mark.django_db
def test_code_cannot_write_a_position_through_the_orm():
    (entry,) = _record(1)
    from audit.models import AppendOnlyError

    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.filter(pk=entry.pk).update(position=1)
    entry.position = 1
    with pytest.raises(AppendOnlyError):
        entry.save()
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.bulk_update([entry], ["position"])


@pytest.mark.django_db
def test_the_sequencers_write_touches_only_pending_rows():
    (entry,) = _record(1)
    audit_sequence()
    stored = AuditEntry.objects.get(pk=entry.pk)
    # A second write for the same row (a second sequencer with a stale head) changes nothing.
    assert AuditEntry.objects._sequence([(entry.pk, 7, GENESIS_HASH, "f" * 64)]) == 0
    assert AuditEntry.objects.get(pk=entry.pk).hash == stored.hash


# --- Verifying --------------------------------------------------------------------------


@pytest.mark.django_db
def test_verify_names_a_tampered_entry_and_counts_the_pending_ones():
    entries = _record(3)
    audit_sequence()
    _record(2, action="still.pending")
    _tamper("UPDATE audit_auditentry SET data = %s WHERE id = %s", [json.dumps({"i": 99}), entries[1].pk])

    check = audit_verify_chain()
    assert check.broken.pk == entries[1].pk
    assert check.why == "its payload does not match its digest"
    assert (check.checked, check.pending) == (1, 2)
    assert not check.intact
    checked, broken, why = check  # callers that predate pending entries unpack three values
    assert (checked, broken.pk, why) == (1, entries[1].pk, check.why)
    assert check[1] is broken


@pytest.mark.django_db
def test_verify_finds_a_gap_in_positions():
    entries = _record(3)
    audit_sequence()
    _tamper("UPDATE audit_auditentry SET position = 10 WHERE id = %s", [entries[2].pk])

    check = audit_verify_chain()
    assert check.broken.pk == entries[2].pk
    assert check.why == "its position is 10, expected 3"


@pytest.mark.django_db
def test_the_command_links_pending_entries_first_unless_told_not_to():
    _record(3)
    out = io.StringIO()
    call_command("verify_audit_chain", "--no-sequence", stdout=out)
    assert "0 entries verified, 3 pending" in out.getvalue()

    out = io.StringIO()
    call_command("verify_audit_chain", stdout=out)
    assert "Linked 3 pending entries" in out.getvalue()
    assert "Audit chain intact: 3 entries verified, 0 pending." in out.getvalue()


@pytest.mark.django_db
def test_the_command_names_the_broken_entry_and_its_position():
    entries = _record(2)
    audit_sequence()
    _record(1)
    _tamper("UPDATE audit_auditentry SET actor = 'mallory' WHERE id = %s", [entries[0].pk])
    with pytest.raises(CommandError, match=rf"#{entries[0].pk}, position 1 .*payload does not match.*1 pending"):
        call_command("verify_audit_chain", "--no-sequence", stdout=io.StringIO())


@pytest.mark.django_db
def test_the_export_shows_pending_entries_as_pending(tmp_path):
    _record(2)
    audit_sequence()
    _record(1, action="still.pending")
    path = tmp_path / "trail.csv"
    out = io.StringIO()
    call_command("export_audit_trail", str(path), "--no-sequence", stdout=out)
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert "Wrote 3 audit entries" in out.getvalue() and "1 pending" in out.getvalue()
    assert [(r["position"], r["action"]) for r in rows] == [("1", "test.event"), ("2", "test.event"),
                                                            ("", "still.pending")]
    assert rows[2]["hash"] == rows[2]["prev_hash"] == ""


@pytest.mark.django_db
def test_the_admin_lists_a_pending_entry_as_pending(client, admin_user):
    audit_sequence()
    _record(1, action="still.pending")
    client.force_login(admin_user)
    page = client.get("/admin/audit/auditentry/")
    assert page.status_code == 200
    assert b'<td class="field-chain_position">pending</td>' in page.content
    assert b'<td class="field-chain_position">1</td>' in page.content


# --- After commit: inline, background, off, and the beat task -----------------------------


@pytest.mark.django_db(transaction=True)
def test_inline_mode_links_entries_right_after_commit(settings):
    settings.AUDIT_SEQUENCER = "inline"
    with transaction.atomic():
        entries = _record(3)
        assert audit_pending_count() == 3
    assert audit_pending_count() == 0
    assert AuditEntry.objects.get(pk=entries[2].pk).position == 3


@pytest.mark.django_db(transaction=True)
def test_off_mode_leaves_entries_for_the_beat_task(settings):
    settings.AUDIT_SEQUENCER = "off"
    with transaction.atomic():
        _record(4)
    assert audit_pending_count() == 4

    audit_sequence_pending.delay()

    assert audit_pending_count() == 0
    assert audit_verify_chain().checked == 4


def test_the_beat_task_is_scheduled_every_interval(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["audit-sequence-pending"]
    assert entry["task"] == "audit.tasks.audit_sequence_pending" == audit_sequence_pending.name
    assert entry["schedule"] == settings.AUDIT_SEQUENCE_INTERVAL_SECONDS


@pytest.mark.django_db(transaction=True)
def test_background_mode_links_entries_soon_after_commit_with_no_sql_on_the_writers_thread(settings):
    settings.AUDIT_SEQUENCER = "background"
    try:
        with CaptureQueriesContext(connection) as ctx:
            with transaction.atomic():
                entries = _record(5)
        # The commit's hook only wakes the thread: the writer ran its INSERTs and nothing else.
        writer_sql = [q["sql"].lstrip().upper() for q in ctx.captured_queries]
        assert sum(s.startswith("INSERT") for s in writer_sql) == 5, writer_sql
        assert all(s.startswith(("INSERT", "BEGIN", "COMMIT")) for s in writer_sql), writer_sql

        deadline = time.monotonic() + 5
        while audit_pending_count() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert audit_pending_count() == 0
        assert AuditEntry.objects.get(pk=entries[-1].pk).position == 5

        # Many commits, one after another, are coalesced and all linked.
        for _ in range(20):
            _record(1)
        assert _sequencer.flush(5)
        check = audit_verify_chain()
        assert (check.checked, check.broken, check.pending) == (25, None, 0)
    finally:
        _sequencer.stop()  # closes its connection, so the test database can be dropped


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", ["off", "inline"])
def test_concurrent_writers_never_break_the_chain(settings, mode):
    """Eight threads write at once. With `off` they only insert and one sequencer links them
    afterwards; with `inline` every commit also runs a sequencer, so sequencers race too."""
    settings.AUDIT_SEQUENCER = mode
    writers, per_writer = 8, 15
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(w: int) -> None:
        try:
            barrier.wait(timeout=10)
            for i in range(per_writer):
                with transaction.atomic():
                    audit_record(actor=f"agent:w{w}", action="test.concurrent", data={"i": i})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors

    audit_sequence()
    check = audit_verify_chain()
    assert (check.checked, check.broken, check.pending) == (writers * per_writer, None, 0)
    positions = sorted(AuditEntry.objects.values_list("position", flat=True))
    assert positions == list(range(1, writers * per_writer + 1))


# --- The database's own guard ------------------------------------------------------------
# PostgreSQL: one trigger (migrations 0002, 0003); SQLite: two (0004). Both refuse every DELETE
# and every UPDATE but the sequencer's one-time write; flush (TRUNCATE on PostgreSQL, DELETE
# around dropped and recreated triggers on SQLite, casework/sqlite/base.py) empties the table.


@contextlib.contextmanager
def _refusal() -> Iterator[None]:
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        yield


def _refused(sql: str, params: list) -> None:
    with _refusal(), connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.django_db
def test_the_database_refuses_changing_a_sequenced_entry():
    (entry,) = _record(1)
    audit_sequence()
    _refused("UPDATE audit_auditentry SET data = %s WHERE id = %s", [json.dumps({"i": 5}), entry.pk])
    _refused("UPDATE audit_auditentry SET hash = %s WHERE id = %s", ["e" * 64, entry.pk])
    assert audit_verify_chain().intact


@pytest.mark.django_db
def test_the_database_refuses_changing_a_pending_entry():
    (entry,) = _record(1)
    _refused("UPDATE audit_auditentry SET action = 'x' WHERE id = %s", [entry.pk])
    # Sequencing it while also changing its content is refused too.
    _refused("UPDATE audit_auditentry SET position = 1, prev_hash = %s, hash = %s, actor = 'mallory' WHERE id = %s",
             [GENESIS_HASH, "a" * 64, entry.pk])
    _refused("UPDATE audit_auditentry SET position = 1, prev_hash = %s, hash = %s, data = %s WHERE id = %s",
             [GENESIS_HASH, "a" * 64, json.dumps({"i": 6}), entry.pk])
    _refused("UPDATE audit_auditentry SET position = 1, prev_hash = %s, hash = %s, case_id = 42 WHERE id = %s",
             [GENESIS_HASH, "a" * 64, entry.pk])


@pytest.mark.django_db
def test_the_database_compares_every_column_when_the_sequencer_writes():
    """The sequencer's write sets position, prev_hash and hash and nothing else: for each other
    column of the model, that write plus the column copied from another entry is refused. On
    SQLite the trigger names the columns it compares (migration 0004), so a column added to the
    model without recreating the trigger fails here, as does a table rebuild that dropped it."""
    now = timezone.now()
    target = AuditEntry.objects.create(timestamp=now, actor="system", actor_type="system", action="a.one")
    other = AuditEntry.objects.create(
        timestamp=now - timedelta(days=1), actor="alice", actor_type="user", actor_user_id=7, action="b.two",
        case_id=9, case_ref="FRA-000009", object_type="cases.case", object_id="9", correlation_id="c-9",
        data={"i": 2}, payload_digest="d" * 64, salt="", tombstone="ERASURE-1")
    quote = connection.ops.quote_name
    columns = [f.column for f in AuditEntry._meta.concrete_fields if f.column not in ("position", "prev_hash", "hash")]
    assert "scheme" in columns  # both entries are of scheme 2: that column is set to 1 below, not copied
    with connection.cursor() as cursor:
        for column in (c for c in columns if c != "scheme"):
            cursor.execute(f"SELECT {quote(column)} FROM audit_auditentry WHERE id IN (%s, %s) ORDER BY id",
                           [target.pk, other.pk])
            first, second = cursor.fetchall()
            assert first != second, f"give `other` a value of its own for {column}"

    sequencing = "UPDATE audit_auditentry SET position = 1, prev_hash = %s, hash = %s"
    for column in columns:
        value = "1" if column == "scheme" else f"(SELECT {quote(column)} FROM audit_auditentry WHERE id = {other.pk})"
        _refused(f"{sequencing}, {quote(column)} = {value} WHERE id = %s", [GENESIS_HASH, "a" * 64, target.pk])
    # The same write without a copied column is the sequencer's, and goes through.
    with connection.cursor() as cursor:
        cursor.execute(f"{sequencing} WHERE id = %s", [GENESIS_HASH, "a" * 64, target.pk])
        assert cursor.rowcount == 1


@pytest.mark.django_db
def test_the_database_refuses_sequencing_an_entry_twice():
    (entry,) = _record(1)
    audit_sequence()
    _refused("UPDATE audit_auditentry SET position = position + 100 WHERE id = %s", [entry.pk])
    _refused("UPDATE audit_auditentry SET position = NULL, prev_hash = NULL, hash = NULL WHERE id = %s",
             [entry.pk])


@pytest.mark.django_db
def test_the_database_refuses_deleting_any_entry():
    pending, sequenced = _record(2)
    AuditEntry.objects._sequence([(sequenced.pk, 1, GENESIS_HASH, "b" * 64)])
    _refused("DELETE FROM audit_auditentry WHERE id = %s", [pending.pk])
    _refused("DELETE FROM audit_auditentry WHERE id = %s", [sequenced.pk])
    assert AuditEntry.objects.count() == 2


@pytest.mark.django_db
def test_the_database_refuses_what_gets_past_the_codes_guards():
    """AuditEntry.objects refuses update() and delete() (AppendOnlyError); the plain base
    manager Django uses internally and a queryset's _raw_delete do not ask it. The database does."""
    (entry,) = _record(1)
    with _refusal():
        AuditEntry._base_manager.filter(pk=entry.pk).update(action="x")
    with _refusal():
        AuditEntry._base_manager.filter(pk=entry.pk).delete()
    with _refusal():
        AuditEntry._base_manager.filter(pk=entry.pk)._raw_delete(connection.alias)
    assert AuditEntry.objects.get(pk=entry.pk).action == "test.event"


@pytest.mark.django_db
def test_the_database_lets_the_sequencer_write_once():
    assert guard_in_place()
    _record(3)
    assert audit_sequence() == 3
    assert audit_verify_chain().checked == 3


@pytest.mark.django_db(transaction=True)
def test_flush_empties_the_trail_and_leaves_its_guard_in_place():
    """What the test runner does between transactional tests, and `manage.py flush`: TRUNCATE
    on PostgreSQL, which the trigger does not see; DELETE on SQLite, with the triggers dropped
    and created again around it in the same transaction."""
    _record(2)
    call_command("flush", interactive=False, verbosity=0, inhibit_post_migrate=True)
    assert AuditEntry.objects.count() == 0
    assert guard_in_place()
    (entry,) = _record(1)
    _refused("DELETE FROM audit_auditentry WHERE id = %s", [entry.pk])
    _refused("UPDATE audit_auditentry SET action = 'x' WHERE id = %s", [entry.pk])


# --- The migration ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_numbers_an_existing_chain_in_id_order():
    """Entries chained before sequencing existed (in id order, hashes set) get positions 1..N
    in that order, and the chain still verifies."""
    from django.db.migrations.executor import MigrationExecutor
    from django.utils import timezone

    before = [("audit", "0001_initial")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old_model = executor.loader.project_state(before).apps.get_model("audit", "AuditEntry")
        prev_hash = GENESIS_HASH
        for i in range(3):
            entry = AuditEntry(timestamp=timezone.now(), actor="system", actor_type="system",
                               action="old.entry", case_ref="", object_type="", object_id="",
                               correlation_id="", data={"i": i}, prev_hash=prev_hash, scheme=1)
            entry.hash = entry.compute_hash()
            old_model.objects.create(**{f.attname: getattr(entry, f.attname)
                                        for f in old_model._meta.concrete_fields if f.name != "id"})
            prev_hash = entry.hash
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes("audit"))

    assert list(AuditEntry.objects.order_by("id").values_list("position", flat=True)) == [1, 2, 3]
    assert set(AuditEntry.objects.values_list("scheme", flat=True)) == {1}  # 0009 kept their hashes
    check = audit_verify_chain()
    assert (check.checked, check.broken, check.pending) == (3, None, 0)
    _record(1)  # autocommit, AUDIT_SEQUENCER=inline: linked on the spot, after the old chain
    assert AuditEntry.objects.latest("id").position == 4
    assert audit_verify_chain().checked == 4
