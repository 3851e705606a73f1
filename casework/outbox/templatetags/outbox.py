"""The case page's "Outgoing events": each event and how far each of its deliveries got."""

from __future__ import annotations

from django import template
from django.utils import timezone

from casework.outbox.models import Delivery, OutboxEvent

register = template.Library()

# The most recent events shown on a case page.
SHOWN = 50


def delivery_wording(delivery: Delivery) -> str:
    """What happened, never more: "requested" until a receiver answered 2xx."""
    state = delivery.state
    if state == Delivery.State.DELIVERED:
        return f"delivered (HTTP {delivery.last_status}, {delivery.last_latency_ms} ms)"
    if state == Delivery.State.DEAD:
        why = f"HTTP {delivery.last_status}" if delivery.last_status else (delivery.last_error or "no answer")
        return f"failed ({why}, after {delivery.attempts} attempt{'s' if delivery.attempts != 1 else ''})"
    if state == Delivery.State.RETRYING:
        why = f"HTTP {delivery.last_status}" if delivery.last_status else (delivery.last_error or "no answer")
        at = timezone.localtime(delivery.next_attempt_at).strftime("%Y-%m-%d %H:%M")
        return f"retrying (attempt {delivery.attempts} failed: {why}; next at {at})"
    if state == Delivery.State.DELIVERING:
        return f"requested (attempt {delivery.attempts} in progress)"
    return "requested"


@register.inclusion_tag("outbox/_case_events_list.html")
def outgoing_events(case):
    events = list(OutboxEvent.objects.filter(case=case).order_by("-created_at", "-pk")
                  .prefetch_related("deliveries__endpoint")[:SHOWN])
    rows = [{"event": e, "deliveries": [{"delivery": d, "endpoint": d.endpoint, "wording": delivery_wording(d)}
                                        for d in e.deliveries.all()]} for e in events]
    return {"rows": rows}
