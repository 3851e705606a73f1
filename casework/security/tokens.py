"""Making, checking and revoking API tokens; the DRF authentication class that reads them."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.throttling import AnonRateThrottle

from audit.services import audit_record
from casework.security.models import ApiToken

# last_used_at is written at most once a minute per token: a busy client must not turn
# every read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def api_token_create(*, actor, user, name: str = "", days: int | None = None) -> tuple[ApiToken, str]:
    """A new token for `user`; returns the row and the secret, which is never stored."""
    days = settings.API_TOKEN_DAYS if days is None else days
    secret = secrets.token_hex(20)
    token = ApiToken(user=user, name=name, prefix=secret[:8], digest=token_digest(secret),
                     expires_at=timezone.now() + timedelta(days=days) if days else None)
    token.full_clean()
    token.save()
    audit_record(actor=actor, action="api_token.created", obj=token,
                 data={"user": user.username, "prefix": token.prefix, "name": name,
                       "expires_at": token.expires_at.isoformat() if token.expires_at else None})
    return token, secret


@transaction.atomic
def api_token_revoke(*, actor, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(actor=actor, action="api_token.revoked", obj=token,
                     data={"user": token.user.username, "prefix": token.prefix})
    return token


class ApiTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <secret>`, as before; an expired or revoked token is a 401.

    DRF checks throttles after authentication, so a caller guessing tokens would never meet
    the anonymous rate: failed tokens are counted here per IP, at that rate, and past it the
    answer is 429 with Retry-After."""

    def authenticate(self, request):
        throttle = _FailedTokenThrottle()
        if not throttle.allow_request(request, None):
            raise exceptions.Throttled(throttle.wait())
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            throttle.note_failure()
            raise

    def authenticate_credentials(self, key):
        token = ApiToken.objects.select_related("user").filter(digest=token_digest(key)).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This token was revoked.")
        now = timezone.now()
        if token.expires_at is not None and token.expires_at <= now:
            raise exceptions.AuthenticationFailed("This token has expired.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token


class _FailedTokenThrottle(AnonRateThrottle):
    """The anonymous rate, counting only failed tokens (allow_request does not record)."""

    def get_cache_key(self, request, view):
        return f"throttle_failed_token_{self.get_ident(request)}"

    def allow_request(self, request, view):
        self.key = self.get_cache_key(request, view)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return len(self.history) < self.num_requests

    def note_failure(self) -> None:
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)
