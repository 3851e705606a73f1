"""One row per Idempotency-Key a client sent: the request it came with and the answer it got."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class IdempotencyKey(models.Model):
    # Keys are the client's: unique per user and operation, never across users.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    operation = models.CharField(max_length=80, help_text="The API operation the key was used on.")
    key = models.CharField(max_length=255)
    # SHA-256 of the request's canonical JSON body: the same key with another body is refused.
    fingerprint = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "operation", "key"], name="idempotency_key_unique")]

    def __str__(self) -> str:
        return f"{self.operation} {self.key}"
