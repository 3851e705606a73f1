"""Tombstoning the audit entries that quote personal data: one path for retention and erasure.

Both pick the entries (retention: every entry about a purged case; erasure: the entries whose
payload names the subject) and hand them here; this leaves out the entries that cannot or must
not lose their payload (an erasure's own record, a retention run's record of what it purged, and
entries of scheme 1, whose hash covers the payload), counts those as kept, and tombstones the
rest through audit.erasure.audit_entries_tombstone under the request's reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from audit.erasure import ERASURE_ACTION, audit_entries_tombstone
from audit.models import SCHEME_SALTED, AuditEntry

# Records of what was removed: they name a request or a policy and counts, never the data.
KEEP_ACTIONS = (ERASURE_ACTION, "retention.purged", "erasure.requested", "erasure.approved", "erasure.started",
                "erasure.resumed", "erasure.failed", "erasure.completed")


@dataclass
class Tombstoned:
    tombstoned: int = 0
    old_scheme: int = 0  # entries whose payload could not be erased (scheme 1): reported as kept

    def as_dict(self) -> dict[str, int]:
        return {"audit entries tombstoned": self.tombstoned,
                "audit entries kept (sequenced before salted digests, scheme 1)": self.old_scheme}


def audit_tombstone(*, entries: Q, request_ref: str, actor: Any = "system",
                    names_subject: Callable[[str, dict], bool] | None = None) -> Tombstoned:
    """Tombstone the audit entries `entries` selects (not yet tombstoned, not a KEEP_ACTIONS
    record) whose payload `names_subject(actor, data)` says names the subject (all of them when
    None), in the caller's transaction."""
    result = Tombstoned()
    rows = (AuditEntry.objects.filter(entries).filter(tombstone="").exclude(action__in=KEEP_ACTIONS)
            .values_list("pk", "scheme", "actor", "data").order_by("pk"))
    todo = []
    for pk, scheme, actor_name, data in rows.iterator(chunk_size=1000):
        if names_subject is not None and not names_subject(actor_name, data):
            continue
        if scheme != SCHEME_SALTED:
            result.old_scheme += 1
        else:
            todo.append(pk)
    if todo:
        result.tombstoned = audit_entries_tombstone(entries=todo, request_ref=request_ref, actor=actor)
    return result
