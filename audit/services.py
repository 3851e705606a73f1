"""The one function that writes audit entries."""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models, transaction
from django.utils import timezone

from audit.context import get_correlation_id
from audit.models import AuditEntry

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


def _lock_chain_head() -> None:
    """Serialise writers on the chain head until the surrounding transaction ends.

    PostgreSQL: a transaction-scoped advisory lock. SQLite: the database's own write lock,
    which an IMMEDIATE transaction (our setting) already holds from BEGIN.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CHAIN_LOCK_KEY])


def audit_record(
    *,
    actor: Any,
    action: str,
    case: Any = None,
    obj: models.Model | None = None,
    data: dict[str, Any] | None = None,
    correlation_id: str | None = None,
) -> AuditEntry:
    """Append one entry to the audit chain.

    `actor` is a user, "agent:<name>" or "system". Call it last in a service's transaction:
    the chain lock is held from here until that transaction commits.
    """
    actor_name, actor_type, actor_user_id = _actor_fields(actor)
    # Round-trip through JSON so the stored value hashes the same when read back.
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
    # Inside a service's transaction no savepoint is needed: a failed audit write must fail
    # the whole service anyway (nothing is saved unaudited).
    with transaction.atomic(savepoint=False):
        _lock_chain_head()
        last = AuditEntry.objects.order_by("-id").values_list("hash", flat=True).first()
        entry.prev_hash = last or GENESIS_HASH
        entry.hash = entry.compute_hash()
        entry.save(force_insert=True)
    return entry


def audit_verify_chain() -> tuple[int, AuditEntry | None, str]:
    """Walk the chain in order. Returns (entries checked, first broken entry or None, why)."""
    expected_prev = GENESIS_HASH
    checked = 0
    for entry in AuditEntry.objects.order_by("id").iterator(chunk_size=2000):
        if entry.prev_hash != expected_prev:
            return checked, entry, "its prev_hash does not match the previous entry's hash"
        if entry.compute_hash() != entry.hash:
            return checked, entry, "its content does not match its hash"
        expected_prev = entry.hash
        checked += 1
    return checked, None, ""
