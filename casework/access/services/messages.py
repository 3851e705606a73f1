"""Agent-to-agent messages in the seed's envelope (request and reply)."""

from __future__ import annotations

import logging
import uuid

from django.db import transaction

from audit.services import audit_record
from casework.access.models import (
    AgentMessage,
)

logger = logging.getLogger(__name__)


# --- agent-to-agent messages ------------------------------------------------------------------

def new_correlation_id() -> str:
    return f"corr-{uuid.uuid4().hex[:12]}"


@transaction.atomic
def message_send(*, case, sender: str, receiver: str, action: str, context: dict,
                 status: str = AgentMessage.Status.PENDING, error: dict | None = None, correlation_id: str = "",
                 reply_to: AgentMessage | None = None, run_id: int | None = None, key: str = "") -> AgentMessage:
    """Store one message in the seed's envelope. With run_id and key it is written once:
    a resumed run that sends it again gets the stored one back."""
    if key and run_id is not None:
        existing = AgentMessage.objects.filter(run_id=run_id, key=key).first()
        if existing:
            return existing
    message = AgentMessage(case=case, sender=sender, receiver=receiver, action=action, context=context,
                           correlation_id=correlation_id or new_correlation_id(), status=status, error=error,
                           reply_to=reply_to, run_id=run_id, key=key)
    # Field checks only: the foreign keys come from the database and the constraints live there.
    message.full_clean(exclude=["case", "reply_to"], validate_unique=False, validate_constraints=False)
    message.save()
    audit_record(actor=f"agent:{sender}" if sender.endswith("Agent") else "system", action="access.message_sent",
                 case=case, obj=message,
                 data={"sender": sender, "receiver": receiver, "action": action, "status": status,
                       "correlation_id": message.correlation_id, "error": error,
                       # what the case timeline shows after the arrow
                       "to": f"{receiver}: {action}" + (" (error)" if status == "error" else "")})
    return message


@transaction.atomic
def message_reply(*, request: AgentMessage, action: str, context: dict, status: str, error: dict | None = None,
                  run_id: int | None = None, key: str = "", receiver: str = "") -> AgentMessage:
    """The receiver answers: same correlation id, to the sender (or to `receiver`, when the
    answer goes on to the orchestrator); the request's own status becomes the outcome."""
    reply = message_send(case=request.case, sender=request.receiver, receiver=receiver or request.sender, action=action,
                         context=context, status=status, error=error, correlation_id=request.correlation_id,
                         reply_to=request, run_id=run_id, key=key)
    AgentMessage.objects.filter(pk=request.pk, status=AgentMessage.Status.PENDING).update(status=status)
    return reply

