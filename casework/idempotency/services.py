"""The Idempotency-Key header, after the IETF draft (draft-ietf-httpapi-idempotency-key-header).

A client that may retry a POST sends `Idempotency-Key: <unique string>`:

- the same key with the same body returns the first answer again (status and body, with
  `Idempotent-Replayed: true`), and nothing is done twice;
- the same key with another body is refused with 422 (the draft's "reuse with a different
  payload");
- two requests with one key at the same time: the key's row is written in the same database
  transaction as the work, so the second waits on the unique index until the first commits,
  then replays its answer. (The draft allows 409 for a request still in progress; waiting
  gives the client the answer instead.)

A request refused with a 4xx writes nothing, so its key stays free: a client may fix the
body and send it again under the same key. Keys expire after IDEMPOTENCY_KEY_HOURS (24 by
default); the beat task `idempotency_keys_purge` deletes them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.exceptions import ValidationError as DrfValidationError
from rest_framework.response import Response

from casework.errors import DomainError
from casework.idempotency.models import IdempotencyKey

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255


class KeyReused(DomainError):
    """The key was used before with a different request body."""

    status_code = 422


def fingerprint(body) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
                          .encode()).hexdigest()


def _hours() -> float:
    return float(getattr(settings, "IDEMPOTENCY_KEY_HOURS", 24))


def _replay(row: IdempotencyKey) -> Response:
    response = Response(row.response, status=row.status_code)
    response["Idempotent-Replayed"] = "true"
    return response


def _stored(*, user, operation: str, key: str, print_: str, now: datetime) -> IdempotencyKey | None:
    row = IdempotencyKey.objects.filter(user=user, operation=operation, key=key).first()
    if row is None:
        return None
    if row.created_at < now - timedelta(hours=_hours()):
        row.delete()  # expired: the key is new again
        return None
    if row.fingerprint != print_:
        raise KeyReused(f"The {HEADER} {key!r} was used with another request body; use a new key for a "
                        "new request.", code="idempotency_key_reused")
    return row


def idempotent(request, *, operation: str, handle: Callable[[], Response], now: datetime | None = None) -> Response:
    """Run `handle` (which does the work in the caller's transaction and returns the Response)
    at most once per Idempotency-Key. Without the header it simply runs."""
    key = request.headers.get(HEADER)
    if key is None:
        return handle()
    key = key.strip()
    if not key or len(key) > MAX_KEY_LENGTH:
        raise DrfValidationError({HEADER: [f"Give a key of 1 to {MAX_KEY_LENGTH} characters."]})
    now = now or timezone.now()
    print_ = fingerprint(request.data)
    row = _stored(user=request.user, operation=operation, key=key, print_=print_, now=now)
    if row is not None:
        return _replay(row)
    try:
        with transaction.atomic():
            # The key's row first: a concurrent request with the same key waits here, on the
            # unique index, until this transaction ends.
            row = IdempotencyKey.objects.create(user=request.user, operation=operation, key=key,
                                                fingerprint=print_, status_code=0, response={}, created_at=now)
            response = handle()
            if response.status_code >= 500:
                transaction.set_rollback(True)
                return response
            row.status_code, row.response = response.status_code, response.data
            row.save(update_fields=["status_code", "response"])
            return response
    except IntegrityError:
        # Another request with this key committed first: its answer stands.
        row = _stored(user=request.user, operation=operation, key=key, print_=print_, now=now)
        if row is None:
            raise
        return _replay(row)


def idempotency_keys_purge(*, now: datetime | None = None) -> int:
    now = now or timezone.now()
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=now - timedelta(hours=_hours())).delete()
    return deleted
