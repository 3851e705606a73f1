"""The support ticket's decision on a close made outside its page (the queue's bulk close),
registered on its CaseType (casework.cases.types.case_type_register_decide): escalated and no
action through the ticket's own services; replied needs the reply's text, sent from the
ticket's page."""

from __future__ import annotations

from django.core.exceptions import ValidationError


def ticket_decide(*, actor, case, outcome: str, reason: str):
    from casework.support.services import ticket_close_no_action, ticket_escalate

    if outcome == "escalated":
        return ticket_escalate(actor=actor, ticket=case.record, reason=reason)
    if outcome == "no_action":
        return ticket_close_no_action(actor=actor, ticket=case.record, reason=reason)
    raise ValidationError("A reply needs its text; send it from the ticket's page.")
