"""The append-only audit trail.

Entries form one hash chain: each entry's hash covers its own fields and the previous
entry's hash, so changing or removing any row breaks every hash after it
(`manage.py verify_audit_chain` finds the first break). Entries are written only by
`audit.services.audit_record`; nothing updates or deletes them.
"""

from __future__ import annotations

import hashlib
import json

from django.db import models


class AppendOnlyError(Exception):
    pass


class AuditEntryQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError("Audit entries are append-only.")

    def delete(self):
        raise AppendOnlyError("Audit entries are append-only.")


class AuditEntry(models.Model):
    class ActorType(models.TextChoices):
        USER = "user", "User"
        AGENT = "agent", "Agent"
        SYSTEM = "system", "System"

    timestamp = models.DateTimeField(db_index=True)
    actor = models.CharField(max_length=150, help_text="Username, agent:<name>, or system.")
    actor_type = models.CharField(max_length=10, choices=ActorType.choices)
    actor_user_id = models.BigIntegerField(null=True, blank=True)
    action = models.CharField(max_length=80, db_index=True)
    # Plain columns rather than a foreign key: the audit app depends on nothing above it,
    # and an entry must outlive whatever it describes.
    case_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    case_ref = models.CharField(max_length=32, blank=True, db_index=True)
    object_type = models.CharField(max_length=80, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    correlation_id = models.CharField(max_length=64, blank=True, db_index=True)
    data = models.JSONField(default=dict, blank=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"#{self.pk} {self.timestamp:%Y-%m-%d %H:%M:%S} {self.actor} {self.action}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError("Audit entries are append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Audit entries are append-only.")

    def canonical(self) -> str:
        """The entry's content as the hash sees it: sorted-key JSON, UTC ISO timestamp."""
        return json.dumps(
            {
                "timestamp": self.timestamp.isoformat(timespec="microseconds"),
                "actor": self.actor,
                "actor_type": self.actor_type,
                "actor_user_id": self.actor_user_id,
                "action": self.action,
                "case_id": self.case_id,
                "case_ref": self.case_ref,
                "object_type": self.object_type,
                "object_id": self.object_id,
                "correlation_id": self.correlation_id,
                "data": self.data,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
        )

    def compute_hash(self) -> str:
        return hashlib.sha256((self.prev_hash + self.canonical()).encode()).hexdigest()

    @property
    def summary(self) -> str:
        return self.action.replace("_", " ").replace(".", ": ")
