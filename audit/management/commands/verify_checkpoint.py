"""Offline: check a checkpoint's signature, and optionally an exported trail against it.

Needs no database: an auditor with a checkpoint file, the public key (from the /audit/key/
page or a case report) and, for the entries, the CSV of `manage.py export_audit_trail`."""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from audit.checkpoints import CheckpointError, checkpoint_parse, public_key_parse
from audit.models import SCHEME_FIELDS, AuditEntry
from audit.services import GENESIS_HASH


def _int_or_none(value: str) -> int | None:
    return int(value) if value not in ("", None) else None


def trail_check(path: Path, position: int, head_hash: str) -> str:
    """Recompute the chain from the CSV's first entry to `position`; return the problem or ""."""
    expected_prev, count = GENESIS_HASH, 0
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if not row.get("position"):
                break  # pending entries come last and are not part of the chain
            entry = AuditEntry(
                timestamp=dt.datetime.fromisoformat(row["timestamp"]), actor=row["actor"],
                actor_type=row["actor_type"], actor_user_id=_int_or_none(row["actor_user_id"]),
                action=row["action"], case_id=_int_or_none(row["case_id"]), case_ref=row["case_ref"],
                object_type=row["object_type"], object_id=row["object_id"], correlation_id=row["correlation_id"],
                data=json.loads(row["data"]), prev_hash=row["prev_hash"], position=_int_or_none(row["position"]),
                # A trail exported before issue 42 has no scheme column: every entry is of scheme 1.
                scheme=int(row.get("scheme") or SCHEME_FIELDS), salt=row.get("salt", ""),
                payload_digest=row.get("payload_digest", ""), tombstone=row.get("tombstone", ""))
            count += 1
            if int(row["position"]) != count:
                return f"position {row['position']} follows {count - 1}: an entry is missing"
            if entry.prev_hash != expected_prev:
                return f"at position {count} the prev_hash does not match the previous entry's hash"
            if entry.scheme != SCHEME_FIELDS and not entry.tombstoned \
                    and entry.compute_payload_digest() != entry.payload_digest:
                return f"at position {count} the payload does not match its digest"
            if entry.compute_hash() != row["hash"]:
                return f"at position {count} the content does not match its hash"
            expected_prev = row["hash"]
            if count == position:
                return "" if row["hash"] == head_hash else (
                    f"at position {position} the trail's hash {row['hash']} is not the signed {head_hash}")
    return f"the trail has {count} entries; the checkpoint is at position {position}"


class Command(BaseCommand):
    help = (
        "Check a signed audit checkpoint with a public key, without the database; with --trail, also check that "
        "an export_audit_trail CSV chains up to exactly the signed head; with --hashes and --entry, that "
        "entries a case report lists (position and hash) are in the checkpoint's signed hash list."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the checkpoint file")
        parser.add_argument("--key", required=True,
                            help="the public key: a file holding it, or the key itself (verifier key, PEM or base64)")
        parser.add_argument("--trail", help="a CSV written by manage.py export_audit_trail")
        parser.add_argument("--hashes", help="the checkpoint's hash list (hashes-<position>.txt beside it)")
        parser.add_argument("--entry", action="append", default=[], metavar="POSITION:HASH",
                            help="with --hashes: an entry (a case report lists position and hash) that must be in the "
                                 "signed list at its position; repeatable")

    def handle(self, *args, file: str, key: str, trail: str | None = None, hashes: str | None = None,
               entry: list[str] | None = None, **options):
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}.")
        key_text = Path(key).read_text(encoding="utf-8") if Path(key).is_file() else key
        try:
            signed = checkpoint_parse(text)
            verifier = signed.signed_by([public_key_parse(key_text, name=signed.key_name)])
        except CheckpointError as exc:
            raise CommandError(f"Checkpoint {file}: {exc}.")
        c = signed.checkpoint
        self.stdout.write(self.style.SUCCESS(
            f"Signature good: log {c.origin}, position {c.position}, head {c.head_hash}, "
            f"signed {c.time:%Y-%m-%d %H:%M:%S} UTC by key {verifier.key_id}."))
        if entry and not hashes:
            raise CommandError("--entry needs --hashes: the signed hash list the entries are looked up in.")
        if hashes:
            self._entries(c, Path(hashes), entry or [])
        if trail:
            problem = trail_check(Path(trail), c.position, c.head_hash)
            if problem:
                raise CommandError(f"Trail {trail} does not match the checkpoint: {problem}.")
            self.stdout.write(self.style.SUCCESS(
                f"Trail {trail} chains from the first entry to the signed head: positions 1 to {c.position} verified."))

    def _entries(self, c, path: Path, entries: list[str]) -> None:
        try:
            listed = c.hashes_check(path.read_text(encoding="utf-8"))
        except (OSError, CheckpointError) as exc:
            raise CommandError(f"Hash list {path}: {exc}.")
        self.stdout.write(self.style.SUCCESS(
            f"Hash list {path} is the signed one: positions {c.hashes_from} to {c.position}."))
        for item in entries:
            position, _, hash_ = item.partition(":")
            if not position.isdigit() or len(hash_) != 64:
                raise CommandError(f"--entry {item!r} is not POSITION:HASH (a decimal position, a 64-character hash).")
            index = int(position) - c.hashes_from
            if not 0 <= index < len(listed):
                raise CommandError(f"Entry {position} is outside this list ({c.hashes_from} to {c.position}): use "
                                   "the checkpoint whose list covers it.")
            if listed[index] != hash_.lower():
                raise CommandError(f"Entry {position}: the signed list has hash {listed[index]}, not {hash_}.")
            self.stdout.write(self.style.SUCCESS(f"Entry {position} is in the signed chain with hash {listed[index]}."))
