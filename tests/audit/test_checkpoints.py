"""Signed checkpoints of the chain head: a chain rewritten with every hash recomputed (what a
DBA can do with the trigger off) no longer matches what was published, and the check names
where; a good chain passes; a checkpoint by an unknown key, a forged one, or a truncated chain
fails; checkpoints come every N entries or M minutes (an injected clock)."""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from audit.checkpoint_services import audit_checkpoint_publish, checkpoint_latest, checkpoint_names
from audit.checkpoints import CheckpointError, checkpoint_parse, current_key, signing_key, signing_key_generate
from audit.models import AuditEntry
from audit.services import GENESIS_HASH, audit_record, audit_sequence
from tests.audit.guard import behind_the_codes_back
from tests.fakes.guard import RecordsErrors

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 11, 25, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def signing(settings, tmp_path):
    """A fresh signing key, checkpoint store and keyring for this test."""
    settings.AUDIT_SIGNING_KEY = signing_key_generate().decode()
    settings.STORAGES = {**settings.STORAGES, "audit_checkpoints": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(tmp_path / "checkpoints")}}}
    settings.AUDIT_CHECKPOINT_KEYRING = tmp_path / "keyring"
    settings.AUDIT_CHECKPOINT_EVERY_ENTRIES = 1000
    settings.AUDIT_CHECKPOINT_EVERY_MINUTES = 10
    settings.AUDIT_CHECKPOINT_WEBHOOK_URL = ""
    return tmp_path / "checkpoints"


def _add(n: int) -> None:
    for _ in range(n):
        audit_record(actor="agent:geo", action="agent.finished", data={"risk": 0.4})
    audit_sequence()  # the test's transaction never commits, so no on-commit pass runs


def _publish(minutes: float = 0, force: bool = True):
    return audit_checkpoint_publish(now=T0 + dt.timedelta(minutes=minutes), force=force)


def _verify(directory, *extra: str) -> str:
    out = io.StringIO()
    call_command("verify_audit_chain", "--checkpoints", str(directory), *extra, stdout=out)
    return out.getvalue()


def _rewrite_from(position: int) -> None:
    """What a DBA can do: change one entry, then recompute every hash after it, trigger off."""
    prev = AuditEntry.objects.get(position=position - 1).hash if position > 1 else GENESIS_HASH
    entries = list(AuditEntry.objects.filter(position__gte=position).order_by("position"))
    with behind_the_codes_back() as cursor:
        for entry in entries:
            if entry.position == position:
                entry.data = {"risk": 0.0, "note": "rewritten"}
                entry.payload_digest = entry.compute_payload_digest()
            entry.prev_hash = prev
            entry.hash = entry.compute_hash()
            cursor.execute("UPDATE audit_auditentry SET data = %s, payload_digest = %s, prev_hash = %s, hash = %s "
                           "WHERE id = %s",
                           [json.dumps(entry.data), entry.payload_digest, entry.prev_hash, entry.hash, entry.pk])
            prev = entry.hash


def test_a_good_chain_passes_against_its_checkpoints(signing):
    _add(3)
    first = _publish().signed
    _add(4)
    second = _publish(1).signed
    assert (first.checkpoint.position, second.checkpoint.position) == (3, 7)
    assert checkpoint_names() == ["checkpoint-000000000003.txt", "checkpoint-000000000007.txt"]
    head = AuditEntry.objects.get(position=7)
    assert second.checkpoint.head_hash == head.hash
    # Beside each checkpoint, the hashes since the previous one, signed through their SHA-256.
    listed = second.checkpoint.hashes_check((signing / "hashes-000000000007.txt").read_text())
    assert listed == [AuditEntry.objects.get(position=p).hash for p in range(4, 8)]
    _add(2)  # entries after the last checkpoint are not vouched for yet, and that is no failure
    out = _verify(signing)
    assert "Audit chain intact: 9 entries verified" in out
    assert "2 signed checkpoint(s) match the chain, up to position 7" in out


def test_a_rewritten_chain_with_every_hash_recomputed_fails_naming_the_position(signing):
    for _ in range(4):
        _add(3)
        _publish()  # checkpoints at 3, 6, 9, 12
    _rewrite_from(5)
    out = io.StringIO()
    call_command("verify_audit_chain", stdout=out)
    assert "Audit chain intact: 12 entries verified" in out.getvalue()  # the hashes alone see nothing
    with pytest.raises(CommandError) as failure:
        _verify(signing)
    message = str(failure.value)
    assert "does not match checkpoint checkpoint-000000000006.txt" in message
    assert AuditEntry.objects.get(position=6).hash in message
    # The checkpoint's signed hash list (entries 4 to 6) names the very entry.
    assert (f"The first position that differs is 5: the database has hash {AuditEntry.objects.get(position=5).hash}, "
            "the signed hash list hashes-000000000006.txt has") in message
    # Without the list (not copied, or altered), the checkpoints still bound it.
    (signing / "hashes-000000000006.txt").write_text("0" * 64 + "\n")
    with pytest.raises(CommandError, match=r"The first checkpoint that differs is at position 6; the checkpoints "
                                           r"confirm the chain up to position 3, so the first rewritten entry is "
                                           r"between positions 4 and 6 \(its hash list .* cannot be used"):
        _verify(signing)
    (signing / "hashes-000000000006.txt").unlink()
    with pytest.raises(CommandError, match=r"between positions 4 and 6 \(its hash list .* is not in the directory"):
        _verify(signing)
    # The publisher checks the newest checkpoint on every pass, and signs nothing over a rewrite.
    _add(3)
    with pytest.raises(CheckpointError, match="no longer matches the newest checkpoint: at position 12"):
        _publish()
    assert len(checkpoint_names()) == 4


def test_a_chain_rewritten_from_its_first_entry_fails_at_the_first_checkpoint(signing):
    _add(2)
    _publish()
    _rewrite_from(1)
    with pytest.raises(CommandError, match=r"at position 2 .*The first position that differs is 1:"):
        _verify(signing)


def test_a_truncated_chain_fails(signing):
    _add(5)
    _publish()
    with behind_the_codes_back() as cursor:
        cursor.execute("DELETE FROM audit_auditentry WHERE position > 3")
    with pytest.raises(CommandError, match=r"truncated: the database's chain ends at position 3.*entries 4 to 5"):
        _verify(signing)
    # Nor is a checkpoint signed over it: the publisher refuses, loudly (the beat task fails and logs).
    _add(1)
    with pytest.raises(CheckpointError, match="ends at position 4, behind the newest checkpoint \\(5\\)"):
        _publish(1)
    assert checkpoint_names() == ["checkpoint-000000000005.txt"]


def test_a_checkpoint_signed_by_an_unknown_key_fails(signing, settings):
    _add(2)
    _publish()
    settings.AUDIT_SIGNING_KEY = signing_key_generate().decode()  # a new key, the old one not kept
    with pytest.raises(CommandError, match=r"checkpoint-000000000002.txt: signed by key casework/audit\+[0-9a-f]{8}, "
                                           r"which is not in the keyring"):
        _verify(signing)


def test_after_a_rotation_the_keyring_keeps_old_checkpoints_verifying(signing, settings):
    _add(2)
    _publish()
    old_vkey = current_key().vkey
    call_command("audit_key", "--retire", stdout=io.StringIO())
    call_command("audit_key", "--retire", stdout=io.StringIO())  # once is enough
    assert Path(settings.AUDIT_CHECKPOINT_KEYRING).read_text().count(old_vkey) == 1
    settings.AUDIT_SIGNING_KEY = signing_key_generate().decode()
    _add(1)
    _publish(1)
    assert "2 signed checkpoint(s) match the chain, up to position 3" in _verify(signing)


def test_a_checkpoint_edited_after_signing_fails(signing):
    _add(2)
    published = _publish().signed
    path = signing / published.checkpoint.file_name
    forged = path.read_text().replace("\n2\n", "\n1\n", 1)
    path.write_text(forged)
    with pytest.raises(CommandError, match="does not verify"):
        _verify(signing)


def test_a_directory_without_checkpoints_is_not_a_pass(signing, tmp_path):
    _add(1)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match="No checkpoints"):
        _verify(tmp_path / "empty")


def test_checkpoints_come_every_n_entries(signing, settings):
    settings.AUDIT_CHECKPOINT_EVERY_ENTRIES = 5
    settings.AUDIT_CHECKPOINT_EVERY_MINUTES = 60
    _add(1)
    assert _publish(0, force=False).signed.checkpoint.position == 1  # the first: none yet
    _add(4)
    assert _publish(1, force=False).signed is None  # 4 entries since
    _add(1)
    assert _publish(2, force=False).signed.checkpoint.position == 6  # 5 entries since
    assert len(checkpoint_names()) == 2


def test_checkpoints_come_every_m_minutes_when_the_chain_grew(signing, settings):
    settings.AUDIT_CHECKPOINT_EVERY_ENTRIES = 1000
    settings.AUDIT_CHECKPOINT_EVERY_MINUTES = 10
    _add(1)
    assert _publish(0, force=False).signed is not None
    _add(1)
    assert _publish(9.9, force=False).signed is None
    assert _publish(10, force=False).signed.checkpoint.position == 2
    assert _publish(30, force=False).signed is None  # nothing new to vouch for
    assert checkpoint_latest().checkpoint.time == T0 + dt.timedelta(minutes=10)


def test_without_a_key_nothing_is_published(signing, settings):
    settings.AUDIT_SIGNING_KEY = ""
    _add(1)
    published = _publish()
    assert published.signed is None and "no signing key" in published.why
    assert checkpoint_names() == []


def test_a_key_in_every_accepted_form_loads_and_a_bad_one_is_named_not_quoted(settings, tmp_path):
    from cryptography.hazmat.primitives import serialization

    pem = signing_key_generate()
    key_file = tmp_path / "key.pem"
    key_file.write_bytes(pem)
    raw = serialization.load_pem_private_key(pem, None).private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    ids = set()
    for value in (pem.decode(), str(key_file), base64.b64encode(raw).decode()):
        settings.AUDIT_SIGNING_KEY = value
        ids.add(current_key().key_id)
    assert len(ids) == 1
    settings.AUDIT_SIGNING_KEY = "c2VjcmV0LWJ1dC1ub3QtYS1rZXk="
    with pytest.raises(CheckpointError, match="AUDIT_SIGNING_KEY is not an Ed25519 private key") as failure:
        signing_key()
    assert "c2VjcmV0" not in str(failure.value)


class _Receiver(RecordsErrors):
    """A checkpoint webhook on 127.0.0.1; close() raises what its handler raised (tests/fakes/guard.py)."""

    fake_name = "checkpoint webhook receiver"

    def __init__(self, script: list[int]):
        self._init_errors()
        self.bodies: list[bytes] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                try:
                    receiver.bodies.append(self.rfile.read(int(self.headers.get("content-length", 0))))
                    self.send_response(script.pop(0) if script else 200)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except Exception as exc:
                    receiver.record_error(exc)
                    raise

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/checkpoints"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.check_on_stop()


def test_each_checkpoint_is_posted_to_the_webhook_and_a_failed_post_is_tried_again(signing, settings):
    receiver = _Receiver(script=[503])
    settings.AUDIT_CHECKPOINT_WEBHOOK_URL = receiver.url
    try:
        _add(2)
        published = _publish()
        assert published.webhook == "webhook answered 503"
        assert _publish(1, force=False).webhook == "webhook took position 2"  # nothing new signed; re-sent
        assert _publish(2, force=False).webhook == "webhook already has position 2"
    finally:
        receiver.close()
    assert len(receiver.bodies) == 2
    assert checkpoint_parse(receiver.bodies[-1].decode()).checkpoint == published.signed.checkpoint


def test_an_auditor_verifies_a_checkpoint_and_the_exported_trail_offline(signing, tmp_path):
    _add(4)
    published = _publish().signed
    trail = tmp_path / "trail.csv"
    call_command("export_audit_trail", str(trail), stdout=io.StringIO())
    key = tmp_path / "key.pub"
    key.write_text(current_key().pem)
    out = io.StringIO()
    cp_file = signing / published.checkpoint.file_name
    call_command("verify_checkpoint", str(cp_file), "--key", str(key), "--trail", str(trail), stdout=out)
    assert f"Signature good: log casework/audit, position 4, head {published.checkpoint.head_hash}" in out.getvalue()
    assert "positions 1 to 4 verified" in out.getvalue()
    # The same check with the verifier key string from the /audit/key/ page, and entries as a case
    # report lists them looked up in the signed hash list.
    third = AuditEntry.objects.get(position=3)
    out = io.StringIO()
    call_command("verify_checkpoint", str(cp_file), "--key", current_key().vkey, "--hashes",
                 str(signing / "hashes-000000000004.txt"), "--entry", f"3:{third.hash}", stdout=out)
    assert f"Entry 3 is in the signed chain with hash {third.hash}." in out.getvalue()
    with pytest.raises(CommandError, match="Entry 3: the signed list has hash"):
        call_command("verify_checkpoint", str(cp_file), "--key", str(key), "--hashes",
                     str(signing / "hashes-000000000004.txt"), "--entry", f"3:{'0' * 64}")
    # A trail whose entry was rewritten (every hash recomputed) does not reach the signed head.
    _rewrite_from(3)
    call_command("export_audit_trail", str(trail), stdout=io.StringIO())
    with pytest.raises(CommandError, match="at position 4 the trail's hash"):
        call_command("verify_checkpoint", str(cp_file), "--key", str(key), "--trail", str(trail))
    other = tmp_path / "other.pub"
    other.write_text(base64.b64encode(b"\x01" * 32).decode())
    with pytest.raises(CommandError, match="not in the keyring"):
        call_command("verify_checkpoint", str(cp_file), "--key", str(other))


def test_the_key_page_shows_the_key_the_newest_checkpoint_and_the_retired_keys(signing, settings, client, mona):
    _add(2)
    old_vkey = current_key().vkey
    Path(settings.AUDIT_CHECKPOINT_KEYRING).write_text(old_vkey + "\n")
    settings.AUDIT_SIGNING_KEY = signing_key_generate().decode()
    published = _publish().signed
    client.force_login(mona)  # any signed-in person: a manager too
    page = client.get("/audit/key/").content.decode()
    assert current_key().key_id in page and current_key().vkey in page
    assert "BEGIN PUBLIC KEY" in page
    assert published.checkpoint.head_hash in page and "Position 3" in page
    assert "Retired keys" in page and old_vkey in page
    settings.AUDIT_SIGNING_KEY = ""
    assert "No signing key is configured" in client.get("/audit/key/").content.decode()


def test_celery_beat_publishes_checkpoints(signing, settings):
    from audit.tasks import audit_checkpoint_publish as task

    entry = settings.CELERY_BEAT_SCHEDULE["audit-checkpoint-publish"]
    assert entry["task"] == task.name and entry["schedule"] == settings.AUDIT_CHECKPOINT_CHECK_SECONDS
    _add(2)
    assert task.apply().get() == 2  # run here, as a worker would: it signed the head
    assert task.apply().get() is None  # nothing due


def test_metrics_show_the_head_and_the_newest_checkpoint_so_a_stall_can_alert(signing, client):
    _add(3)
    _publish()
    _add(2)
    text = client.get("/metrics").content.decode()
    head = AuditEntry.objects.filter(position__isnull=False).count()
    assert f"casework_audit_chain_head_position {float(head)}" in text
    assert f"casework_audit_checkpoint_position {float(head - 2)}" in text
    assert "casework_audit_checkpoint_age_seconds " in text


def test_notes_are_signed_as_go_sumdb_note_signs_them():
    """The reference vector of golang.org/x/mod/sumdb/note (its package documentation): the same
    key hash, verifier key and signature line, so any signed-note tool reads our checkpoints."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from audit.checkpoints import note_sign, public_key_parse

    text = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
    vkey = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
    line = "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
    seed = base64.b64decode("AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz")[1:]  # after the algorithm byte
    verifier, signature, note = note_sign(text, "PeterNeumann", Ed25519PrivateKey.from_private_bytes(seed))
    assert verifier.vkey == vkey
    assert note == f"{text}\n{line}"
    parsed = public_key_parse(vkey)  # checks the key hash against the name and key
    assert parsed == verifier and parsed.verify(signature, text.encode())
