"""Signed checkpoints against a DBA's rewrite, and the restore drill (issue 26, points 3 and 4).
Run by hand:

    .venv/bin/python bench/checkpoint_drill.py [--database-url URL] [--entries 100000]
        [--every 1000] [--files 200] [--file-kb 64] [--write-readme]

Needs PostgreSQL and its client tools (pg_dump, pg_restore, createdb, dropdb). The database named
in the URL (default postgres://postgres@127.0.0.1:5432/casework_checkpoints_bench; the name must
contain "bench") is dropped, re-created and migrated; so is <name>_restored; both are dropped at
the end unless --keep.

1. Writes --entries audit entries in batches of --every, and after each batch publishes a signed
   checkpoint with audit_checkpoint_publish (AUDIT_CHECKPOINT_EVERY_ENTRIES = --every), into a
   temporary checkpoint directory.
2. Uploads --files evidence files of --file-kb KB through attachment_upload, then one checkpoint
   more.
3. The restore drill, as the README says: pg_dump -Fc, tar of MEDIA_ROOT, createdb + pg_restore
   into a fresh database, untar into a fresh directory, and `manage.py verify_restore` run there
   (a new process, as an operator runs it).
4. The rewrite, as a DBA would do it on the original database: trigger disabled, the entry in the
   middle of the chain changed, and every hash after it recomputed and written. Then
   verify_audit_chain without checkpoints (passes: the chain alone cannot tell) and with
   --checkpoints (fails, naming the first checkpoint that differs).

--write-readme replaces the figures between the checkpoint_drill markers in bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from readme_block import write_block  # bench/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parents[1]
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/casework_checkpoints_bench"


def pg_args(url: str) -> tuple[list[str], str, dict]:
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if "bench" not in name:
        raise SystemExit(f"Refusing to drop and re-create {name!r}: the name must contain 'bench'.")
    env = {**os.environ, "PGPASSWORD": parts.password or ""}
    return ["-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432), "-U", parts.username or "postgres"], \
        name, env


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def run(cmd: list[str], env: dict, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, check=True, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--file-kb", type=int, default=64)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()

    where, name, pgenv = pg_args(args.database_url)
    restored = f"{name}_restored"
    restored_url = urlunsplit(urlsplit(args.database_url)._replace(path=f"/{restored}"))
    for db in (name, restored):
        run(["dropdb", *where, "--if-exists", db], pgenv)
    run(["createdb", *where, name], pgenv)

    work = Path(tempfile.mkdtemp(prefix="checkpoint-drill-"))
    sys.path.insert(0, str(REPO))
    from audit.checkpoints import signing_key_generate

    key = signing_key_generate().decode()
    base_env = {
        "DJANGO_SETTINGS_MODULE": "casework.settings", "SECRET_KEY": "bench-only-secret", "FIELD_ENCRYPTION_KEYS": "YmVuY2gtb25seS1maWVsZC1rZXktbm90LWZvci1wcm8=", "DEBUG": "false",
        "LLM_PROVIDER": "offline", "AUDIT_SEQUENCER": "off", "AUDIT_SIGNING_KEY": key,
        "AUDIT_CHECKPOINT_DIR": str(work / "checkpoints"), "AUDIT_CHECKPOINT_KEYRING": str(work / "keyring"),
        "AUDIT_CHECKPOINT_EVERY_ENTRIES": str(args.every),
    }
    os.environ.update({**base_env, "DATABASE_URL": args.database_url, "VAR_DIR": str(work / "var"),
                       "MEDIA_ROOT": str(work / "media")})
    os.environ.pop("CELERY_TASK_ALWAYS_EAGER", None)
    import django

    django.setup()
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import CommandError, call_command
    from django.db import connection

    from audit.checkpoint_services import audit_checkpoint_publish, audit_verify_checkpoints, checkpoints_read_dir
    from audit.checkpoints import keyring
    from audit.models import AuditEntry
    from audit.services import audit_entry_build, audit_record_many, audit_sequence, audit_verify_chain
    from casework.cases.attachments.services import attachment_upload
    from casework.cases.services import case_create
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create

    call_command("migrate", verbosity=0)
    figures: dict[str, str] = {}

    # 1. Entries and checkpoints.
    write_s = publish_s = 0.0
    published = 0
    for start in range(0, args.entries, args.every):
        batch = [audit_entry_build(actor="agent:bench", action="bench.write", data={"n": n})
                 for n in range(start, min(start + args.every, args.entries))]
        _, took = timed(lambda b=batch: (audit_record_many(b), audit_sequence()))
        write_s += took
        result, took = timed(audit_checkpoint_publish, now=datetime.datetime.now(datetime.UTC))
        publish_s += took
        published += result.signed is not None
    head = AuditEntry.objects.filter(position__isnull=False).count()
    store = sum(p.stat().st_size for p in (work / "checkpoints").iterdir())
    figures["entries"] = f"{head:,} entries written in {write_s:.1f} s; {published} checkpoints published, " \
                         f"{publish_s / max(published, 1) * 1000:.1f} ms each (sequence, read head and newest " \
                         f"checkpoint, check it against the chain, sign, write it and its hash list); the store holds " \
                         f"{store / 1e6:.1f} MB"

    # 2. Evidence files.
    alice = user_create(actor="system", username="alice", password="alice-pass-123", role=INVESTIGATOR)
    case = case_create(actor=alice, case_type="fraud_alert", title="Restore drill")
    body = os.urandom(args.file_kb * 1024)
    for i in range(args.files):
        attachment_upload(actor=alice, case=case, upload=SimpleUploadedFile(f"evidence-{i}.pdf",
                                                                             b"%PDF-1.4\n" + body + str(i).encode()))
    audit_sequence()
    audit_checkpoint_publish(force=True)
    connection.close()

    # 3. The restore drill.
    dump, media_tgz = work / "casework.dump", work / "media.tgz"
    _, dump_s = timed(run, ["pg_dump", *where, "-Fc", "-f", str(dump), name], pgenv)
    _, tar_s = timed(run, ["tar", "-C", str(work / "media"), "-czf", str(media_tgz), "."], pgenv)
    _, restore_s = timed(lambda: (run(["createdb", *where, restored], pgenv),
                                  run(["pg_restore", *where, "--no-owner", "--exit-on-error", "-d", restored,
                                       str(dump)], pgenv)))
    (work / "restored-media").mkdir()
    _, untar_s = timed(run, ["tar", "-C", str(work / "restored-media"), "-xzf", str(media_tgz)], pgenv)
    verify_env = {**os.environ, **base_env, "DATABASE_URL": restored_url, "VAR_DIR": str(work / "var-restored"),
                  "MEDIA_ROOT": str(work / "restored-media")}
    check, verify_s = timed(subprocess.run, [sys.executable, "manage.py", "verify_restore"], cwd=REPO,
                            env=verify_env, capture_output=True, text=True)
    figures["drill"] = (
        f"| pg_dump -Fc | {dump_s:.1f} s | {dump.stat().st_size / 1e6:.1f} MB |\n"
        f"| tar of MEDIA_ROOT ({args.files} files of {args.file_kb} KB) | {tar_s:.1f} s | "
        f"{media_tgz.stat().st_size / 1e6:.1f} MB |\n"
        f"| createdb + pg_restore into a fresh database | {restore_s:.1f} s | |\n"
        f"| untar into a fresh directory | {untar_s:.1f} s | |\n"
        f"| manage.py verify_restore (a new process: start-up, chain, checkpoints, files) | {verify_s:.1f} s | "
        f"exit {check.returncode} |\n"
        f"| total | {dump_s + tar_s + restore_s + untar_s + verify_s:.1f} s | |")
    figures["verify_out"] = (check.stdout + check.stderr).strip()

    # 4. The rewrite, on the original.
    middle = head // 2 + 123
    entries = list(AuditEntry.objects.filter(position__gte=middle).order_by("position"))
    prev = AuditEntry.objects.get(position=middle - 1).hash
    rows = []
    start = time.perf_counter()
    for entry in entries:
        if entry.position == middle:
            entry.data = {"n": -1, "note": "rewritten by a DBA"}
            entry.payload_digest = entry.compute_payload_digest()  # scheme 2: the digest too
        entry.prev_hash = prev
        entry.hash = entry.compute_hash()
        rows.append((entry.pk, entry.prev_hash, entry.hash))
        prev = entry.hash
    import json

    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditentry DISABLE TRIGGER audit_auditentry_append_only")
        cursor.execute("UPDATE audit_auditentry SET data = %s, payload_digest = %s WHERE position = %s",
                       [json.dumps({"n": -1, "note": "rewritten by a DBA"}), entries[0].payload_digest, middle])
        for i in range(0, len(rows), 5000):
            ids, prevs, hashes = (list(c) for c in zip(*rows[i:i + 5000], strict=True))
            cursor.execute("UPDATE audit_auditentry AS a SET prev_hash = v.p, hash = v.h FROM "
                           "unnest(%s::bigint[], %s::varchar[], %s::varchar[]) AS v(id, p, h) WHERE a.id = v.id",
                           [ids, prevs, hashes])
        cursor.execute("ALTER TABLE audit_auditentry ENABLE TRIGGER audit_auditentry_append_only")
    rewrite_s = time.perf_counter() - start
    chain, chain_s = timed(audit_verify_chain)
    files, read_s = timed(checkpoints_read_dir, work / "checkpoints")
    result, cp_s = timed(audit_verify_checkpoints, files, keyring())
    out = io.StringIO()
    try:
        call_command("verify_audit_chain", "--no-sequence", "--checkpoints", str(work / "checkpoints"), stdout=out)
        command = "passed (it should not have)"
    except CommandError as exc:
        command = f"failed: {exc}"
    figures["rewrite"] = (
        f"- The rewrite: entry {middle} changed and {len(rows):,} hashes recomputed and written, trigger disabled, "
        f"in {rewrite_s:.1f} s.\n"
        f"- `audit_verify_chain` alone: {'intact' if chain.broken is None else 'broken'} "
        f"({chain.checked:,} entries checked in {chain_s:.1f} s): the chain alone does not see the rewrite.\n"
        f"- Against the {sum(1 for n, _ in files if n.startswith('checkpoint-'))} checkpoints (and their hash "
        f"lists): read in {read_s * 1000:.0f} ms, compared in {cp_s * 1000:.0f} ms; "
        f"{result.matched} agree; the first position that differs, from the first disagreeing checkpoint's "
        f"signed hash list: {result.first_bad} (the rewritten entry is {middle}; the last agreeing checkpoint "
        f"is at {result.last_good}).\n"
        f"- `verify_audit_chain --checkpoints` {command}")
    connection.close()
    if not args.keep:
        for db in (name, restored):
            run(["dropdb", *where, "--if-exists", db], pgenv)
        shutil.rmtree(work, ignore_errors=True)

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown")
    load = os.getloadavg()[0]
    text = (
        f"Machine: {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, "
        f"{subprocess.run(['pg_dump', '--version'], capture_output=True, text=True).stdout.strip()}, "
        f"Django {django.get_version()}; run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"load average {load:.1f} at the end (the machine was shared).\n\n"
        f"{figures['entries']}.\n\n"
        f"**A rewritten chain fails verification against the checkpoints**\n\n{figures['rewrite']}\n\n"
        f"**The restore drill** ({args.entries:,} entries, {args.files} evidence files)\n\n"
        f"| step | time | size |\n|---|---|---|\n{figures['drill']}\n\n"
        f"verify_restore said:\n\n```\n{figures['verify_out']}\n```")
    print(text)
    if args.write_readme:
        write_block("checkpoint_drill", text)


if __name__ == "__main__":
    main()
