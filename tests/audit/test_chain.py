"""The audit trail is one append-only hash chain: tampering with any row is found, and
nothing in the code can change or remove an entry."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from audit.models import AppendOnlyError, AuditEntry
from audit.services import GENESIS_HASH, audit_record, audit_sequence
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from tests.audit.guard import behind_the_codes_back

pytestmark = pytest.mark.django_db


@pytest.fixture
def entries(db):
    """alice's user.created entry plus three more, sequenced, in chain order (alice in no team:
    the conftest's alice joins one, two entries more)."""
    alice = user_create(actor="system", username="alice", password="alice-pass-123", role=INVESTIGATOR)
    audit_record(actor=alice, action="case.commented", data={"body": "first"})
    audit_record(actor="agent:geo", action="agent.finished", data={"risk": 0.4})
    audit_record(actor="system", action="case.closed", data={"outcome": "legit"})
    # The test's transaction never commits, so no on-commit hook links them: do it here.
    audit_sequence()
    return list(AuditEntry.objects.order_by("position"))


def _verify() -> str:
    out = io.StringIO()
    call_command("verify_audit_chain", stdout=out)
    return out.getvalue()


def test_entries_are_chained(entries):
    assert [e.position for e in entries] == [1, 2, 3, 4]
    assert all(e.sequenced for e in entries)
    assert entries[0].prev_hash == GENESIS_HASH
    for previous, entry in zip(entries, entries[1:], strict=False):
        assert entry.prev_hash == previous.hash
    assert all(e.hash == e.compute_hash() for e in entries)
    assert len({e.hash for e in entries}) == len(entries)


def test_it_records_who_acted(entries):
    by_action = {e.action: e for e in entries}
    assert by_action["case.commented"].actor == "alice"
    assert by_action["case.commented"].actor_type == AuditEntry.ActorType.USER
    assert by_action["agent.finished"].actor_type == AuditEntry.ActorType.AGENT
    assert by_action["case.closed"].actor_type == AuditEntry.ActorType.SYSTEM


def test_verify_succeeds_on_an_intact_chain(entries):
    assert f"Audit chain intact: {len(entries)} entries verified, 0 pending." in _verify()


def test_verify_succeeds_on_an_empty_chain(db):
    assert "0 entries verified, 0 pending" in _verify()


def test_verify_names_a_row_changed_behind_the_codes_back(entries):
    tampered = entries[2]
    with behind_the_codes_back() as cursor:
        cursor.execute("UPDATE audit_auditentry SET data = %s WHERE id = %s",
                       [json.dumps({"risk": 0.0}), tampered.pk])
    with pytest.raises(CommandError, match=rf"#{tampered.pk}\b.*payload does not match its digest"):
        _verify()


def test_verify_names_a_non_personal_field_changed_behind_the_codes_back(entries):
    with behind_the_codes_back() as cursor:
        cursor.execute("UPDATE audit_auditentry SET action = 'case.reopened' WHERE id = %s", [entries[3].pk])
    with pytest.raises(CommandError, match=rf"#{entries[3].pk}\b.*content does not match its hash"):
        _verify()


def test_verify_finds_a_removed_middle_row(entries):
    removed, following = entries[1], entries[2]
    with behind_the_codes_back() as cursor:
        cursor.execute("DELETE FROM audit_auditentry WHERE id = %s", [removed.pk])
    with pytest.raises(CommandError, match=rf"#{following.pk}\b.*prev_hash"):
        _verify()


def test_verify_finds_a_rehashed_row(entries):
    """Recomputing the changed row's digest and hash does not help: the next entry still points at the old one."""
    tampered = entries[1]
    tampered.data = {"body": "rewritten"}
    tampered.payload_digest = tampered.compute_payload_digest()
    new_hash = tampered.compute_hash()
    with behind_the_codes_back() as cursor:
        cursor.execute("UPDATE audit_auditentry SET data = %s, payload_digest = %s, hash = %s WHERE id = %s",
                       [json.dumps(tampered.data), tampered.payload_digest, new_hash, tampered.pk])
    with pytest.raises(CommandError, match=rf"#{entries[2].pk}\b"):
        _verify()


def test_the_command_exits_non_zero_when_broken(entries):
    from django.core.management import ManagementUtility

    with behind_the_codes_back() as cursor:
        cursor.execute("UPDATE audit_auditentry SET actor = 'mallory' WHERE id = %s", [entries[0].pk])
    with pytest.raises(SystemExit) as exit_info:
        ManagementUtility(["manage.py", "verify_audit_chain"]).execute()
    assert exit_info.value.code != 0


def test_an_entry_cannot_be_saved_again(entries):
    entry = entries[0]
    entry.action = "something.else"
    with pytest.raises(AppendOnlyError):
        entry.save()
    assert AuditEntry.objects.get(pk=entry.pk).action == "user.created"


def test_an_entry_cannot_be_deleted(entries):
    with pytest.raises(AppendOnlyError):
        entries[0].delete()
    assert AuditEntry.objects.count() == len(entries)


def test_querysets_cannot_update_or_delete(entries):
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.filter(pk=entries[0].pk).update(action="x")
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.all().delete()
    assert AuditEntry.objects.count() == len(entries)
    assert _verify()


def test_export_writes_a_header_and_one_line_per_entry(entries, tmp_path):
    path = tmp_path / "trail.csv"
    out = io.StringIO()
    call_command("export_audit_trail", str(path), stdout=out)
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert f"Wrote {len(entries)} audit entries" in out.getvalue()
    assert [int(r["id"]) for r in rows] == [e.pk for e in entries]
    assert rows[0].keys() >= {"position", "timestamp", "actor", "action", "data", "prev_hash", "hash"}
    assert [r["position"] for r in rows] == ["1", "2", "3", "4"]
    assert json.loads(rows[2]["data"]) == {"risk": 0.4}
    assert rows[3]["prev_hash"] == rows[2]["hash"]


def test_the_admin_shows_entries_read_only(client, admin_user, entries):
    client.force_login(admin_user)
    listing = client.get("/admin/audit/auditentry/")
    assert listing.status_code == 200
    assert b"agent:geo" in listing.content
    assert b"Add audit entry" not in listing.content

    entry = entries[1]
    page = client.get(f"/admin/audit/auditentry/{entry.pk}/change/")
    assert page.status_code == 200
    assert b'name="_save"' not in page.content

    assert client.get("/admin/audit/auditentry/add/").status_code == 403
    assert client.post(f"/admin/audit/auditentry/{entry.pk}/change/", {"action": "x"}).status_code == 403
    assert client.post(f"/admin/audit/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEntry.objects.get(pk=entry.pk).action == entry.action


def test_the_admin_grants_no_write_permission_even_to_a_superuser(rf, admin_user):
    from django.contrib.admin.sites import site

    model_admin = site._registry[AuditEntry]
    request = rf.get("/admin/audit/auditentry/")
    request.user = admin_user
    assert admin_user.is_superuser
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert model_admin.has_view_permission(request)
