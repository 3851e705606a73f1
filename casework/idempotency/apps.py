from __future__ import annotations

from django.apps import AppConfig


class IdempotencyConfig(AppConfig):
    name = "casework.idempotency"
    label = "idempotency"
    verbose_name = "API idempotency keys"
