"""Erasing the payload of audit entries without breaking the chain (issue 42).

An entry of scheme 2 commits to its personal payload (who acted, and `data`) only through a
salted digest (audit.models). `audit_entries_tombstone` replaces that payload by a tombstone
naming the erasure request: actor "[erased]", no user id, empty data, the salt cleared, and
`tombstone` set to the request's reference. The digest, the hashes and the position stay, so
`verify_audit_chain` and every signed checkpoint still verify; without the salt, the digest no
longer confirms a guess at what was erased.

The database allows exactly this update and no other besides the sequencer's (the trigger of
migration 0009). The erasure writes its own entry, naming the request and how many entries it
tombstoned, never the data; `audit_verify_chain` refuses a tombstone whose request no such
entry names, so a payload blanked behind the service's back is still found.

Entries of scheme 1 (sequenced before migration 0009) hash their payload directly and cannot
be tombstoned: asking to is an error, so that an erasure never reports what it did not do.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from audit.models import SCHEME_FIELDS, AuditEntry
from audit.services import ERASURE_ACTION, audit_record

__all__ = ["ERASURE_ACTION", "TombstoneRefused", "audit_entries_tombstone"]

REQUEST_REF_MAX = 64


class TombstoneRefused(Exception):
    """The entries asked for cannot be tombstoned; the message says which and why."""


def _entry_ids(entries: Iterable[AuditEntry | int] | QuerySet) -> list[int]:
    if isinstance(entries, QuerySet):
        return sorted(set(entries.values_list("pk", flat=True)))
    return sorted({int(getattr(e, "pk", e)) for e in entries})


@transaction.atomic
def audit_entries_tombstone(*, entries: Iterable[AuditEntry | int] | QuerySet, request_ref: str, actor: Any) -> int:
    """Replace the payload of `entries` (entries, their ids, or a queryset) by a tombstone
    naming `request_ref`; return how many were tombstoned now.

    1. Check the request reference: 1 to 64 characters, no whitespace. It is a reference to
       the request (a ticket, an erasure record), never personal data itself.
    2. Read the entries: every one must exist, be of scheme 2 and not be an erasure's own
       entry; otherwise TombstoneRefused, and nothing changes.
    3. Tombstone those not tombstoned yet (one UPDATE, as the database's trigger allows):
       entries already tombstoned, by this request or another, are left as they are.
    4. Write the erasure's own entry (ERASURE_ACTION), naming the request and the count.
    """
    ref = (request_ref or "").strip()
    if not ref or len(ref) > REQUEST_REF_MAX or any(ch.isspace() for ch in ref):
        raise ValueError(f"request_ref must be 1 to {REQUEST_REF_MAX} characters without spaces.")
    ids = _entry_ids(entries)
    rows = {pk: (scheme, tombstone, action) for pk, scheme, tombstone, action in
            AuditEntry.objects.filter(pk__in=ids).values_list("pk", "scheme", "tombstone", "action")}
    missing = [pk for pk in ids if pk not in rows]
    if missing:
        raise TombstoneRefused(f"No audit entries with ids {missing[:10]}.")
    old = [pk for pk, (scheme, _, _) in rows.items() if scheme == SCHEME_FIELDS]
    if old:
        raise TombstoneRefused(
            f"{len(old)} of the entries (ids {sorted(old)[:10]}) were sequenced before salted payload digests "
            "(scheme 1): their hash covers the payload itself, so it cannot be erased without breaking the chain.")
    own = [pk for pk, (_, _, action) in rows.items() if action == ERASURE_ACTION]
    if own:
        raise TombstoneRefused(f"Entries {own[:10]} record erasures; they hold no personal data and stay.")
    todo = [pk for pk, (_, tombstone, _) in sorted(rows.items()) if not tombstone]
    count = AuditEntry.objects._tombstone(todo, ref)
    audit_record(actor=actor, action=ERASURE_ACTION, data={"request": ref, "count": count})
    return count
