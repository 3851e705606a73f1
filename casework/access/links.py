"""The employee's answer link: signed, single-use, expiring, no account needed.

The token is `{"r": request id, "n": request nonce}` signed with django.core.signing.Signer
under its own salt, so it cannot be forged without SECRET_KEY and cannot be replayed against
another request row. Whether it may still be used is the database's answer, not the token's:
`expires_at`, `answered_at` (set by a conditional UPDATE, so a second submission finds
nothing to update) and `cancelled_at`. The token carries no timestamp, so the same row always
gives the same link: a reminder carries the link the first email did.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.urls import reverse
from django.utils import timezone

from casework.access.models import InfoRequest

SALT = "casework.access.respond.v1"


def _signer() -> signing.Signer:
    return signing.Signer(salt=SALT)


def link_token(request: InfoRequest) -> str:
    return _signer().sign_object({"r": request.pk, "n": request.nonce})


def link_path(request: InfoRequest) -> str:
    return reverse("access:respond", args=[link_token(request)])


def absolute_url(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def link_url(request: InfoRequest) -> str:
    return absolute_url(link_path(request))


@dataclass
class LinkCheck:
    state: str  # ok | forged | expired | used | cancelled
    request: InfoRequest | None = None

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    def message(self) -> str:
        req = self.request
        if self.state == "forged" or req is None:
            return ("This link is not valid. It may have been copied only in part, or changed. "
                    "Open the link from your email again, or reply to that email.")
        if self.state == "used":
            return f"This link was already used, on {req.answered_at:%d %B %Y at %H:%M} UTC. Thank you for your answer."
        if self.state == "expired":
            return (f"This link expired on {req.expires_at:%d %B %Y at %H:%M} UTC. The investigator handling the "
                    "change has been told; they will contact you.")
        if self.state == "cancelled":
            return f"This request was withdrawn on {req.cancelled_at:%d %B %Y} UTC: {req.cancel_reason or 'no longer needed'}."
        return ""


def link_check(token: str, *, now=None) -> LinkCheck:
    """What a token is: forged (bad signature, unknown or replaced request), or the state of
    its request (ok, used, expired, cancelled). Reads only; changes nothing."""
    now = now or timezone.now()
    try:
        data = _signer().unsign_object(token)
        request_id, nonce = int(data["r"]), str(data["n"])
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        return LinkCheck("forged")
    request = (InfoRequest.objects.select_related("mutation__case", "mutation__changed_by", "mutation__changed_for",
                                                  "mutation__system", "mutation__access_level", "recipient")
               .filter(pk=request_id, kind=InfoRequest.Kind.EMPLOYEE).first())
    if request is None or request.nonce != nonce:
        return LinkCheck("forged")
    state = {"open": "ok", "answered": "used"}.get(request.state(now), request.state(now))
    return LinkCheck(state, request)
