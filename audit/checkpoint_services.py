"""Publishing signed checkpoints of the chain head, and checking the chain against them.

`audit_checkpoint_publish` (the beat task audit.tasks.audit_checkpoint_publish, and
`manage.py audit_checkpoint`) signs the head every AUDIT_CHECKPOINT_EVERY_ENTRIES entries or
AUDIT_CHECKPOINT_EVERY_MINUTES minutes, whichever comes first, writes it through the storage
STORAGES["audit_checkpoints"] (a directory under VAR_DIR by default; point it at a bucket with
object lock in production) and POSTs it to AUDIT_CHECKPOINT_WEBHOOK_URL when one is set.
`audit_verify_checkpoints` (`manage.py verify_audit_chain --checkpoints DIR`) compares the
chain in the database with every checkpoint found.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import httpx
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import connection, transaction
from django.utils import timezone

from audit.checkpoints import (
    FILE_NAME,
    HASHES_NAME,
    Checkpoint,
    CheckpointError,
    SignedCheckpoint,
    VerifierKey,
    checkpoint_parse,
    checkpoint_sign,
    signing_key,
)
from audit.models import AuditEntry

logger = logging.getLogger(__name__)

# Arbitrary constant key for pg_try_advisory_xact_lock: one publisher at a time.
_PUBLISH_LOCK_KEY = 0x41554449_54434B50
_WEBHOOK_STATE = ".webhook-delivered"
# The longest hash list written beside a checkpoint (65 bytes an entry: 6.5 MB).
HASH_LIST_MAX = 100_000


def checkpoint_storage():
    return storages["audit_checkpoints"]


def checkpoint_names() -> list[str]:
    """The checkpoint files in the store, oldest (lowest position) first."""
    storage = checkpoint_storage()
    try:
        _, files = storage.listdir("")
    except FileNotFoundError:
        return []
    return sorted(name for name in files if FILE_NAME.match(name))


def checkpoint_latest() -> SignedCheckpoint | None:
    """The newest checkpoint in the store (highest position), unverified; None if none."""
    names = checkpoint_names()
    if not names:
        return None
    with checkpoint_storage().open(names[-1], "rb") as fh:
        return checkpoint_parse(fh.read().decode("utf-8"))


def _hash_list(first: int, last: int) -> str:
    """Every entry's hash from position `first` to `last`, one a line; "" when that is more than
    HASH_LIST_MAX entries (the first checkpoint of a long chain: the checkpoint alone then)."""
    if last - first + 1 > HASH_LIST_MAX:
        return ""
    hashes = (AuditEntry.objects.filter(position__gte=first, position__lte=last).order_by("position")
              .values_list("hash", flat=True))
    return "".join(f"{h}\n" for h in hashes.iterator(chunk_size=5000))


def _head() -> tuple[int, str] | None:
    return (AuditEntry.objects.filter(position__isnull=False).order_by("-position")
            .values_list("position", "hash").first())


def checkpoint_due(*, head_position: int, last: Checkpoint | None, now: dt.datetime) -> str | None:
    """Why a checkpoint is due now (a sentence), or None. Nothing is due while the head has not
    moved past the last checkpoint: a second checkpoint of the same head would add nothing."""
    if head_position < 1:
        return None
    if last is None:
        return "no checkpoint yet"
    grown = head_position - last.position
    if grown <= 0:
        return None
    if grown >= settings.AUDIT_CHECKPOINT_EVERY_ENTRIES:
        return f"{grown} entries since the last checkpoint"
    if now - last.time >= dt.timedelta(minutes=settings.AUDIT_CHECKPOINT_EVERY_MINUTES):
        return f"{int((now - last.time).total_seconds() // 60)} minutes since the last checkpoint"
    return None


def _publisher_lock() -> bool:
    """Within the caller's transaction: whether this process is the one publisher now. On SQLite
    (one machine; an IMMEDIATE transaction holds the write lock) always yes."""
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_PUBLISH_LOCK_KEY])
        return bool(cursor.fetchone()[0])


@dataclass(frozen=True)
class Published:
    signed: SignedCheckpoint | None
    why: str  # why it was published, or why nothing was
    webhook: str = ""  # what the webhook did, if one is set


def audit_checkpoint_publish(*, now: dt.datetime | None = None, force: bool = False) -> Published:
    """1. Link pending entries (audit_sequence), so that the head is as recent as can be.
    2. Read the head and the newest stored checkpoint; stop unless one is due (or `force`,
       which still never signs the same head twice).
    3. Sign (position, head hash, time) with AUDIT_SIGNING_KEY; write it to the store as
       checkpoint-<position>.txt.
    4. POST the newest checkpoint to AUDIT_CHECKPOINT_WEBHOOK_URL if it has not had it yet
       (a failed POST is tried again on the next call)."""
    from audit.services import audit_sequence

    key = signing_key()
    if key is None:
        return Published(None, "no signing key: set AUDIT_SIGNING_KEY (see README, Audit checkpoints)")
    now = now or timezone.now()
    audit_sequence()
    with transaction.atomic():
        if not _publisher_lock():
            return Published(None, "another process is publishing a checkpoint")
        head = _head()
        latest = checkpoint_latest()
        last = latest.checkpoint if latest else None
        position = head[0] if head else 0
        if last is not None and position < last.position:
            raise CheckpointError(
                f"The audit chain ends at position {position}, behind the newest checkpoint ({last.position}): it was "
                "truncated, or restored from an older backup. No checkpoint is signed until this is resolved "
                "(README, Backup and restore).")
        if last is not None:
            # Each pass also checks the newest checkpoint against the chain: a rewrite is found
            # within AUDIT_CHECKPOINT_CHECK_SECONDS, not only when someone runs the check.
            found = AuditEntry.objects.filter(position=last.position).values_list("hash", flat=True).first()
            if found != last.head_hash:
                raise CheckpointError(
                    f"The audit chain no longer matches the newest checkpoint: at position {last.position} the "
                    f"database has hash {found}, the checkpoint signed {last.head_hash}. The chain was rewritten; "
                    "no checkpoint is signed over it. Run verify_audit_chain --checkpoints to find where.")
        why = checkpoint_due(head_position=position, last=last, now=now)
        if why is None and force and position > (last.position if last else 0):
            why = "asked for"
        signed = None
        if why is not None:
            # Whole seconds: what the signed text holds, so the object equals what is read back.
            hashes_from = (last.position if last else 0) + 1
            hash_list = _hash_list(hashes_from, head[0])
            checkpoint = Checkpoint(settings.AUDIT_CHECKPOINT_ORIGIN, head[0], head[1], now.replace(microsecond=0),
                                    hashes_from if hash_list else None,
                                    hashlib.sha256(hash_list.encode()).hexdigest() if hash_list else None)
            signed = checkpoint_sign(checkpoint, key)
            storage = checkpoint_storage()
            if storage.exists(checkpoint.file_name):
                # Another publisher got here first (the same head), or the store holds another
                # head at this position: never replace what was published.
                with storage.open(checkpoint.file_name, "rb") as fh:
                    there = checkpoint_parse(fh.read().decode("utf-8")).checkpoint
                if there.head_hash != checkpoint.head_hash:
                    raise CheckpointError(f"A checkpoint at position {checkpoint.position} already holds another "
                                          "head hash: the chain was rewritten. Nothing is replaced.")
            else:
                # The hash list first: a checkpoint in the store always has its list beside it.
                if hash_list and not storage.exists(checkpoint.hashes_file_name):
                    storage.save(checkpoint.hashes_file_name, ContentFile(hash_list.encode()))
                storage.save(checkpoint.file_name, ContentFile(signed.text.encode("utf-8")))
            logger.info("Audit checkpoint at position %s published (%s).", checkpoint.position, why)
            latest = signed
        else:
            why = "not due: " + (f"the head is at position {position}, last checkpoint at "
                                 f"{last.position if last else 0}")
    webhook = _webhook_send(latest) if latest is not None else ""
    return Published(signed, why, webhook)


def _webhook_send(latest: SignedCheckpoint) -> str:
    url = settings.AUDIT_CHECKPOINT_WEBHOOK_URL
    if not url:
        return ""
    storage = checkpoint_storage()
    delivered = 0
    if storage.exists(_WEBHOOK_STATE):
        with storage.open(_WEBHOOK_STATE, "rb") as fh:
            text = fh.read().decode().strip()
            delivered = int(text) if text.isdigit() else 0
    position = latest.checkpoint.position
    if delivered >= position:
        return f"webhook already has position {delivered}"
    try:
        response = httpx.post(url, content=latest.text.encode("utf-8"), timeout=10.0,
                              headers={"Content-Type": "text/plain; charset=utf-8",
                                       "X-Checkpoint-Position": str(position)})
    except httpx.HTTPError as exc:
        logger.warning("Audit checkpoint webhook failed (%s); it is tried again next time.", type(exc).__name__)
        return f"webhook failed: {type(exc).__name__}"
    if not response.is_success:
        logger.warning("Audit checkpoint webhook answered %s; it is tried again next time.", response.status_code)
        return f"webhook answered {response.status_code}"
    if storage.exists(_WEBHOOK_STATE):
        storage.delete(_WEBHOOK_STATE)
    storage.save(_WEBHOOK_STATE, ContentFile(str(position).encode()))
    return f"webhook took position {position}"


# --- Verifying against checkpoints -------------------------------------------------------


@dataclass(frozen=True)
class CheckpointCheck:
    matched: int  # checkpoints that agree with the database
    last_good: int  # the highest position a checkpoint vouches for (0: none)
    problem: str  # empty when every checkpoint agrees
    first_bad: int | None = None  # the first checkpoint position that disagrees

    @property
    def ok(self) -> bool:
        return not self.problem


def _first_difference(c: Checkpoint, hash_list: str | None, *, after: int) -> tuple[int, str, str] | str:
    """With the checkpoint's signed hash list: the first position past `after` whose hash in the
    database is not the listed one, (position, database hash, listed hash). Without a usable
    list: why not, as a phrase."""
    if not c.hashes_sha256:
        return "the checkpoint signs no hash list"
    if hash_list is None:
        return f"its hash list {c.hashes_file_name} is not in the directory"
    try:
        listed = c.hashes_check(hash_list)
    except CheckpointError as exc:
        return f"its hash list {c.hashes_file_name} cannot be used: {exc}"
    start = max(after + 1, c.hashes_from)
    found = dict(AuditEntry.objects.filter(position__gte=start, position__lte=c.position)
                 .values_list("position", "hash"))
    for position in range(start, c.position + 1):
        expected = listed[position - c.hashes_from]
        if found.get(position) != expected:
            return position, str(found.get(position)), expected
    return "every listed hash matches, yet the head does not"  # cannot happen: the list ends at the head


def checkpoints_read_dir(directory: Path | str) -> list[tuple[str, str]]:
    """(file name, text) of every file in a directory but hidden ones, by name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"{directory} is not a directory")
    return [(p.name, p.read_text(encoding="utf-8", errors="replace"))
            for p in sorted(directory.iterdir()) if p.is_file() and not p.name.startswith(".")]


def audit_verify_checkpoints(files: Iterable[tuple[str, str]], keys: list[VerifierKey]) -> CheckpointCheck:
    """Compare the sequenced chain with signed checkpoints.

    1. Read every file and check its signature against `keys`: a file that is not a checkpoint,
       is of another log (origin), is signed by a key not in the keyring, or whose signature
       fails, is a problem by itself.
    2. In position order, the database's entry at each checkpoint's position must have the
       hash the checkpoint signed. The first that does not names where the rewrite is: at or
       before that position and after the last checkpoint that agreed. A checkpoint beyond the
       database's head means entries were removed from the end (truncated).
    Run audit_verify_chain too: it finds a row changed without recomputing the hashes.
    """
    signed: list[tuple[str, SignedCheckpoint, VerifierKey]] = []
    files = list(files)
    lists = {name: text for name, text in files if HASHES_NAME.match(name)}
    for name, text in files:
        if name in lists:
            continue
        try:
            cp = checkpoint_parse(text)
            key = cp.signed_by(keys)
        except CheckpointError as exc:
            return CheckpointCheck(0, 0, f"Checkpoint {name}: {exc}.")
        if cp.checkpoint.origin != settings.AUDIT_CHECKPOINT_ORIGIN:
            return CheckpointCheck(0, 0, f"Checkpoint {name} is of log {cp.checkpoint.origin!r}, "
                                         f"not this one ({settings.AUDIT_CHECKPOINT_ORIGIN!r}).")
        signed.append((name, cp, key))
    signed.sort(key=lambda item: (item[1].checkpoint.position, item[0]))
    head = _head()
    head_position = head[0] if head else 0
    matched = last_good = 0
    batch = 500
    for start in range(0, len(signed), batch):
        chunk = signed[start:start + batch]
        hashes = dict(AuditEntry.objects.filter(position__in=[cp.checkpoint.position for _, cp, _ in chunk])
                      .values_list("position", "hash"))
        for name, cp, key in chunk:
            c = cp.checkpoint
            signed_at = f"signed {c.time:%Y-%m-%d %H:%M:%S} UTC by key {key.key_id[:16]}"
            if c.position > head_position:
                return CheckpointCheck(matched, last_good, (
                    f"Audit chain truncated: the database's chain ends at position {head_position}, but checkpoint "
                    f"{name} ({signed_at}) vouches for position {c.position}: entries {head_position + 1} to "
                    f"{c.position} are gone."), first_bad=head_position + 1)
            if hashes.get(c.position) != c.head_hash:
                agrees = (f"the checkpoints confirm the chain up to position {last_good}" if last_good
                          else "no earlier checkpoint confirms any of it")
                head = (f"Audit chain does not match checkpoint {name} ({signed_at}): at position {c.position} "
                        f"the database has hash {hashes.get(c.position)}, the checkpoint signed {c.head_hash}. ")
                exact = _first_difference(c, lists.get(c.hashes_file_name), after=last_good)
                if isinstance(exact, tuple):
                    position, found, signed_hash = exact
                    return CheckpointCheck(matched, last_good, head + (
                        f"The first position that differs is {position}: the database has hash {found}, the signed "
                        f"hash list {c.hashes_file_name} has {signed_hash}."), first_bad=position)
                return CheckpointCheck(matched, last_good, head + (
                    f"The first checkpoint that differs is at position {c.position}; {agrees}, so the first "
                    f"rewritten entry is between positions {last_good + 1} and {c.position} ({exact})."),
                    first_bad=c.position)
            matched += 1
            last_good = c.position
    return CheckpointCheck(matched, last_good, "")


# --- What people are shown ------------------------------------------------------------------


@dataclass(frozen=True)
class CheckpointStatus:
    """The key and the newest checkpoint, for the /audit/key/ page and the case report."""

    key: VerifierKey | None
    retired: list[VerifierKey]
    latest: SignedCheckpoint | None
    problem: str  # a key or keyring that cannot be read, a checkpoint store that cannot be read


def checkpoint_status() -> CheckpointStatus:
    from audit.checkpoints import current_key, keyring

    problem = ""
    key, retired, latest = None, [], None
    try:
        key = current_key()
        retired = [k for k in keyring() if k != key]
    except CheckpointError as exc:
        problem = str(exc)
    try:
        latest = checkpoint_latest()
    except (CheckpointError, OSError) as exc:
        problem = problem or f"The newest checkpoint cannot be read: {exc}"
    return CheckpointStatus(key, retired, latest, problem)


def checkpoint_metric_families(*, now: dt.datetime | None = None) -> list:
    """For /metrics: the chain's head, the newest checkpoint's position and its age, so that an
    alert can fire when checkpoints stop (the beat not running, the key or the store broken)."""
    from prometheus_client.core import GaugeMetricFamily

    head = _head()
    latest = checkpoint_latest()
    families = [
        GaugeMetricFamily("casework_audit_chain_head_position", "Position of the audit chain's newest linked entry.",
                          value=head[0] if head else 0),
        GaugeMetricFamily("casework_audit_checkpoint_position",
                          "Position the newest signed checkpoint vouches for (0: none yet).",
                          value=latest.checkpoint.position if latest else 0),
    ]
    if latest is not None:
        age = ((now or timezone.now()) - latest.checkpoint.time).total_seconds()
        families.append(GaugeMetricFamily(
            "casework_audit_checkpoint_age_seconds",
            "Seconds since the newest checkpoint was signed; with entries past its position, a value well over "
            "AUDIT_CHECKPOINT_EVERY_MINUTES means checkpoints have stopped.", value=max(0.0, age)))
    return families
