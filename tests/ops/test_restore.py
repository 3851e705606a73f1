"""The restore drill, as the README tells an operator to run it: back up the database (pg_dump -Fc
on PostgreSQL; SQLite's online backup API on the embedded default) and the media files, restore
both into a fresh place, and `manage.py verify_restore` there finds the audit chain intact, the
signed checkpoints agreeing with it and every evidence file matching its recorded SHA-256."""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection

from audit.checkpoint_services import audit_checkpoint_publish
from audit.checkpoints import signing_key_generate
from casework.cases.attachments.services import attachment_upload
from casework.cases.services import case_create

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


@pytest.fixture
def evidence(settings, tmp_path, alice):
    """A case with two evidence files and a signed checkpoint of the chain, all committed."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.AUDIT_SIGNING_KEY = signing_key_generate().decode()
    settings.AUDIT_CHECKPOINT_DIR = tmp_path / "checkpoints"
    settings.AUDIT_CHECKPOINT_KEYRING = tmp_path / "keyring"
    settings.STORAGES = {**settings.STORAGES, "audit_checkpoints": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(tmp_path / "checkpoints")}}}
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    files = [attachment_upload(actor=alice, case=case, upload=SimpleUploadedFile(name, body))
             for name, body in (("statement.pdf", PDF), ("notes.txt", b"Called the customer at 10:02."))]
    assert audit_checkpoint_publish(force=True).signed is not None
    return files


def _backup_and_restore(tmp_path: Path) -> str:
    """Back up the test database and restore it into a fresh one; return the fresh one's URL."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        env = {**os.environ, "PGPASSWORD": db.get("PASSWORD") or ""}
        where = ["-h", db.get("HOST") or "127.0.0.1", "-p", str(db.get("PORT") or 5432), "-U", db.get("USER") or ""]
        fresh = f"{db['NAME']}_restored"
        dump = tmp_path / "casework.dump"
        subprocess.run(["pg_dump", *where, "-Fc", "-f", str(dump), db["NAME"]], env=env, check=True)
        subprocess.run(["dropdb", *where, "--if-exists", fresh], env=env, check=True)
        subprocess.run(["createdb", *where, fresh], env=env, check=True)
        subprocess.run(["pg_restore", *where, "--no-owner", "--exit-on-error", "-d", fresh, str(dump)],
                       env=env, check=True)
        password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
        return f"postgres://{db.get('USER')}{password}@{where[1]}:{where[3]}/{fresh}"
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        copy = tmp_path / "restored.sqlite3"
        target = sqlite3.connect(copy)
        connection.connection.backup(target)  # a consistent copy of a live database
        target.close()
        return f"sqlite:///{copy}"
    pytest.fail(f"No backup recipe for {connection.vendor}: the README's restore drill covers PostgreSQL and SQLite.")


def _drop_restored(url: str) -> None:
    if connection.vendor == "postgresql":
        db = connection.settings_dict
        env = {**os.environ, "PGPASSWORD": db.get("PASSWORD") or ""}
        subprocess.run(["dropdb", "-h", db.get("HOST") or "127.0.0.1", "-p", str(db.get("PORT") or 5432),
                        "-U", db.get("USER") or "", "--if-exists", url.rsplit("/", 1)[1]], env=env, check=True)


@pytest.mark.django_db(transaction=True)
def test_a_backup_restored_into_a_fresh_database_verifies(evidence, settings, tmp_path):
    url = _backup_and_restore(tmp_path)
    media = tmp_path / "restored-media"
    shutil.copytree(settings.MEDIA_ROOT, media)  # the README's tar of MEDIA_ROOT, in short
    try:
        env = {**os.environ, "DATABASE_URL": url, "MEDIA_ROOT": str(media), "VAR_DIR": str(tmp_path / "var"),
               "AUDIT_SIGNING_KEY": settings.AUDIT_SIGNING_KEY, "AUDIT_SEQUENCER": "off",
               "AUDIT_CHECKPOINT_KEYRING": str(tmp_path / "keyring")}
        run = subprocess.run([sys.executable, "manage.py", "verify_restore", "--checkpoints",
                              str(tmp_path / "checkpoints")], cwd=django_settings.BASE_DIR, env=env,
                             capture_output=True, text=True, timeout=120)
    finally:
        _drop_restored(url)
    assert run.returncode == 0, run.stderr
    assert "Checkpoints agree: 1 signed checkpoint(s)" in run.stdout
    assert "Evidence files: 2 match their recorded SHA-256." in run.stdout
    assert "Restore verified" in run.stdout


@pytest.mark.django_db
def test_verify_restore_names_an_evidence_file_that_does_not_match_and_a_missing_one(evidence, settings, tmp_path):
    statement, notes = evidence
    out = io.StringIO()
    call_command("verify_restore", stdout=out)
    assert "Restore verified" in out.getvalue()
    (Path(settings.MEDIA_ROOT) / statement.file.name).write_bytes(PDF + b"%altered\n")
    (Path(settings.MEDIA_ROOT) / notes.file.name).unlink()
    with pytest.raises(CommandError) as failure:
        call_command("verify_restore", stdout=io.StringIO())
    message = str(failure.value)
    assert "2 of 2 evidence files do not match" in message
    assert f"{statement.case.reference}/statement.pdf" in message and "recorded " + statement.sha256 in message
    assert f"{notes.case.reference}/notes.txt ({notes.file.name}): missing" in message


@pytest.mark.django_db
def test_verify_restore_fails_without_checkpoints(evidence, tmp_path):
    (tmp_path / "none").mkdir()
    with pytest.raises(CommandError, match="No checkpoints in .*nothing outside the database vouches"):
        call_command("verify_restore", "--checkpoints", str(tmp_path / "none"), stdout=io.StringIO())
