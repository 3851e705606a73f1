"""Erasure and the append-only chain (issue 42): a tombstoned payload leaves the chain and the
checkpoints signed before it verifying; any other change of a payload is still found; the
database allows the tombstone and nothing else besides the sequencer's write."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from audit.erasure import ERASURE_ACTION, TombstoneRefused, audit_entries_tombstone
from audit.models import TOMBSTONE_ACTOR, AuditEntry
from audit.services import GENESIS_HASH, audit_record, audit_sequence, audit_verify_chain
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from tests.audit.guard import behind_the_codes_back
from tests.audit.test_checkpoints import signing  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(db):
    return user_create(actor="system", username="alice", password="alice-pass-123", role=INVESTIGATOR)


@pytest.fixture
def comments(alice):
    """Three entries of alice's with personal data in them, sequenced."""
    written = [audit_record(actor=alice, action="case.commented", data={"body": f"Bob Example's sick note {i}"})
               for i in range(3)]
    audit_sequence()
    return [AuditEntry.objects.get(pk=e.pk) for e in written]


def _refused(sql: str, params: list) -> None:
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def _checkpoint_verify(directory) -> str:
    out = io.StringIO()
    call_command("verify_audit_chain", "--checkpoints", str(directory), stdout=out)
    return out.getvalue()


def test_a_tombstoned_payload_leaves_the_chain_and_earlier_checkpoints_verifying(signing, comments):  # noqa: F811
    from audit.checkpoint_services import audit_checkpoint_publish

    assert audit_checkpoint_publish(force=True).signed is not None  # signed before the erasure
    hashes = {e.pk: (e.position, e.payload_digest, e.hash) for e in comments}

    count = audit_entries_tombstone(entries=comments[:2], request_ref="ERASURE-7", actor="system")
    audit_sequence()

    assert count == 2
    erased = {e.pk: e for e in AuditEntry.objects.filter(pk__in=hashes)}
    for entry in comments[:2]:
        row = erased[entry.pk]
        assert (row.actor, row.actor_user_id, row.data, row.salt, row.tombstone) == (
            TOMBSTONE_ACTOR, None, {}, "", "ERASURE-7")
        assert (row.position, row.payload_digest, row.hash) == hashes[entry.pk]
    assert erased[comments[2].pk].data == {"body": "Bob Example's sick note 2"}
    assert not AuditEntry.objects.filter(data__icontains="sick note 0").exists()
    # The erasure is on record, naming the request and the count, not the data.
    record = AuditEntry.objects.get(action=ERASURE_ACTION)
    assert record.data == {"request": "ERASURE-7", "count": 2}

    check = audit_verify_chain()
    assert check.intact and check.checked == AuditEntry.objects.count()
    out = _checkpoint_verify(signing)
    assert "Audit chain intact" in out and "1 signed checkpoint(s) match the chain" in out


def test_an_auditor_verifies_a_trail_with_tombstones_offline(signing, comments, tmp_path):  # noqa: F811
    """export_audit_trail and verify_checkpoint --trail, no database: the exported tombstones
    still chain up to a checkpoint signed before the erasure; a payload edited in the export does not."""
    from audit.checkpoint_services import audit_checkpoint_publish
    from audit.checkpoints import current_key

    published = audit_checkpoint_publish(force=True).signed
    audit_entries_tombstone(entries=comments[1:2], request_ref="ERASURE-10", actor="system")
    trail, key = tmp_path / "trail.csv", tmp_path / "key.pub"
    call_command("export_audit_trail", str(trail), stdout=io.StringIO())
    key.write_text(current_key().pem)
    checkpoint = signing / published.checkpoint.file_name
    out = io.StringIO()
    call_command("verify_checkpoint", str(checkpoint), "--key", str(key), "--trail", str(trail), stdout=out)
    assert f"positions 1 to {published.checkpoint.position} verified" in out.getvalue()
    assert "Bob Example's sick note 1" not in trail.read_text()
    trail.write_text(trail.read_text().replace("sick note 2", "sick note 9"))
    with pytest.raises(CommandError, match="payload does not match its digest"):
        call_command("verify_checkpoint", str(checkpoint), "--key", str(key), "--trail", str(trail))


def test_a_changed_payload_that_is_no_erasure_is_found(comments):
    audit_entries_tombstone(entries=[comments[0]], request_ref="ERASURE-8", actor="system")
    audit_sequence()
    with behind_the_codes_back() as cursor:  # a superuser, trigger off
        cursor.execute("UPDATE audit_auditentry SET data = %s WHERE id = %s",
                       [json.dumps({"body": "nothing to see"}), comments[1].pk])
    check = audit_verify_chain()
    assert (check.broken.pk, check.why) == (comments[1].pk, "its payload does not match its digest")


def test_a_tombstone_made_behind_the_services_back_is_found(comments):
    """Blanking a payload as a tombstone does, but with no erasure on record, is a rewrite."""
    with behind_the_codes_back() as cursor:
        cursor.execute("UPDATE audit_auditentry SET actor = %s, actor_user_id = NULL, data = '{}', salt = '', "
                       "tombstone = 'MADE-UP' WHERE id = %s", [TOMBSTONE_ACTOR, comments[1].pk])
    check = audit_verify_chain()
    assert check.broken.pk == comments[1].pk
    assert "tombstone of request 'MADE-UP', which no erasure entry records" in check.why
    with pytest.raises(CommandError, match="no erasure entry records"):
        call_command("verify_audit_chain", stdout=io.StringIO())


def test_pending_entries_can_be_tombstoned_and_then_sequenced(alice):
    entry = audit_record(actor=alice, action="case.commented", data={"body": "Bob's address"})
    assert audit_entries_tombstone(entries=[entry.pk], request_ref="ERASURE-9", actor=alice) == 1
    audit_sequence()
    assert AuditEntry.objects.get(pk=entry.pk).tombstoned
    assert audit_verify_chain().intact


def test_a_second_erasure_leaves_a_tombstone_as_it_is(comments):
    audit_entries_tombstone(entries=comments[:1], request_ref="ERASURE-1", actor="system")
    assert audit_entries_tombstone(entries=AuditEntry.objects.filter(action="case.commented"),
                                   request_ref="ERASURE-2", actor="system") == 2
    assert AuditEntry.objects.get(pk=comments[0].pk).tombstone == "ERASURE-1"
    audit_sequence()
    assert audit_verify_chain().intact


def test_the_database_allows_the_tombstone_and_refuses_every_other_update(comments):
    target = comments[0].pk
    tombstone = "actor = '[erased]', actor_user_id = NULL, data = '{}', salt = '', tombstone = 'R-1'"
    # The tombstone with anything else changed (its digest, hash, position, a non-personal field).
    for extra in ("payload_digest = 'f'", "hash = 'e'", "position = 99", "action = 'x'", "scheme = 1"):
        _refused(f"UPDATE audit_auditentry SET {tombstone}, {extra} WHERE id = %s", [target])
    # Half a tombstone: the salt kept, the data kept, another actor, no request named.
    _refused("UPDATE audit_auditentry SET actor = '[erased]', actor_user_id = NULL, data = '{}', tombstone = 'R-1' "
             "WHERE id = %s", [target])
    _refused("UPDATE audit_auditentry SET actor = '[erased]', actor_user_id = NULL, salt = '', tombstone = 'R-1' "
             "WHERE id = %s", [target])
    _refused("UPDATE audit_auditentry SET actor = 'bob', actor_user_id = NULL, data = '{}', salt = '', "
             "tombstone = 'R-1' WHERE id = %s", [target])
    _refused("UPDATE audit_auditentry SET actor = '[erased]', actor_user_id = NULL, data = '{}', salt = '' "
             "WHERE id = %s", [target])
    _refused("UPDATE audit_auditentry SET data = '{}' WHERE id = %s", [target])
    _refused("DELETE FROM audit_auditentry WHERE id = %s", [target])
    # The tombstone itself goes through, once; a tombstone is not rewritten.
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE audit_auditentry SET {tombstone} WHERE id = %s", [target])
        assert cursor.rowcount == 1
    _refused("UPDATE audit_auditentry SET tombstone = 'R-2' WHERE id = %s", [target])


def test_it_refuses_entries_of_the_old_scheme_and_its_own_records(comments):
    with behind_the_codes_back() as cursor:  # what an entry sequenced before migration 0009 looks like
        cursor.execute("UPDATE audit_auditentry SET scheme = 1, salt = '', payload_digest = '' WHERE id = %s",
                       [comments[0].pk])
    with pytest.raises(TombstoneRefused, match="scheme 1"):
        audit_entries_tombstone(entries=comments, request_ref="ERASURE-3", actor="system")
    _refused("UPDATE audit_auditentry SET actor = '[erased]', actor_user_id = NULL, data = '{}', salt = '', "
             "tombstone = 'R-1' WHERE id = %s", [comments[0].pk])
    assert AuditEntry.objects.filter(action="case.commented", tombstone="").count() == 3  # nothing changed
    audit_entries_tombstone(entries=comments[1:], request_ref="ERASURE-4", actor="system")
    own = AuditEntry.objects.get(action=ERASURE_ACTION)
    with pytest.raises(TombstoneRefused, match="record erasures"):
        audit_entries_tombstone(entries=[own], request_ref="ERASURE-5", actor="system")
    with pytest.raises(ValueError, match="request_ref"):
        audit_entries_tombstone(entries=comments[1:], request_ref="Bob Example", actor="system")


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_sequenced_entries_hashes_and_salts_pending_ones():
    """Entries sequenced before 0009 keep scheme 1 and their hashes (a checkpoint over them
    stays true); an entry still pending joins scheme 2 and is sequenced so."""
    from django.db.migrations.executor import MigrationExecutor
    from django.utils import timezone

    before = [("audit", "0008_accessentry")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old_model = executor.loader.project_state(before).apps.get_model("audit", "AuditEntry")
        prev_hash, old_hashes = GENESIS_HASH, []
        for i in range(2):
            entry = AuditEntry(timestamp=timezone.now(), actor="alice", actor_type="user", actor_user_id=3,
                               action="old.entry", data={"i": i}, prev_hash=prev_hash, position=i + 1, scheme=1)
            entry.hash = entry.compute_hash()
            fields = {f.attname: getattr(entry, f.attname) for f in old_model._meta.concrete_fields if f.name != "id"}
            old_model.objects.create(**{**fields, "position": None, "prev_hash": None, "hash": None})
            with connection.cursor() as cursor:  # the sequencer's write, as the old trigger allows
                cursor.execute("UPDATE audit_auditentry SET position = %s, prev_hash = %s, hash = %s "
                               "WHERE position IS NULL", [i + 1, prev_hash, entry.hash])
            prev_hash = entry.hash
            old_hashes.append(entry.hash)
        old_model.objects.create(timestamp=timezone.now(), actor="bob", actor_type="user", action="old.pending",
                                 data={"note": "pending"})
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes("audit"))

    rows = list(AuditEntry.objects.order_by("id"))
    assert [(e.scheme, e.hash) for e in rows[:2]] == [(1, old_hashes[0]), (1, old_hashes[1])]
    assert (rows[2].scheme, len(rows[2].salt), rows[2].position) == (2, 32, None)
    assert rows[2].payload_digest == rows[2].compute_payload_digest()
    assert audit_sequence() == 1
    check = audit_verify_chain()
    assert (check.checked, check.broken) == (3, None)
    with pytest.raises(TombstoneRefused):
        audit_entries_tombstone(entries=rows[:1], request_ref="ERASURE-6", actor="system")
    assert audit_entries_tombstone(entries=rows[2:], request_ref="ERASURE-6", actor="system") == 1
    assert audit_verify_chain().intact
