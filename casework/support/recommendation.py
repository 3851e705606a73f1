"""What the support agents recommend, for the dashboard's agreement with people: the triage's
routing (Ticket.recommended_action). Answering (automatically or by a specialist) agrees with a
reply; escalating to a person agrees with an escalation. A triage that failed recommends nothing,
whatever routing it had reached."""

from __future__ import annotations

from django.db.models import F

from casework.cases.types import Recommendation
from casework.support.models import RecommendedAction, Ticket
from casework.support.states import TicketState


def _records(case_ref):
    return (Ticket.objects.filter(case_id=case_ref).exclude(recommended_action="")
            .exclude(lifecycle=TicketState.TRIAGE_FAILED)
            .annotate(rec=F("recommended_action")).order_by("-id"))


RECOMMENDATION = Recommendation(
    records=_records,
    agrees={RecommendedAction.AUTO_RESPOND: ("replied",), RecommendedAction.ROUTE_SPECIALIST: ("replied",),
            RecommendedAction.ESCALATE_HUMAN: ("escalated",)},
    labels=dict(RecommendedAction.choices),
)
