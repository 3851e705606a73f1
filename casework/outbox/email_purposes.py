"""What follows when an email is sent or has failed for good, per `purpose`: a case type
registers it from its AppConfig.ready (casework.outbox.email re-exports these, where the types
register them), and the email worker (casework/outbox/email_sending.py) calls it in the
transaction that records the outcome. The outbox names no case type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from casework.outbox.models import OutboundEmail


@dataclass(frozen=True)
class EmailPurpose:
    name: str
    on_sent: Callable[[OutboundEmail], None]
    on_failed: Callable[[OutboundEmail], None]


EMAIL_PURPOSES: dict[str, EmailPurpose] = {}


def email_purpose_register(purpose: EmailPurpose) -> None:
    """A case type says what follows when its emails are sent or fail (from AppConfig.ready)."""
    EMAIL_PURPOSES[purpose.name] = purpose
