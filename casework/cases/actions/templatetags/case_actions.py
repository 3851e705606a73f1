"""The case page's Actions panel: what the case's decisions asked other systems to do, and how
far each got."""

from __future__ import annotations

from django import template
from django.utils import timezone

from casework.outbox.models import Action, Delivery

register = template.Library()


def _at(when, *, day_of=None) -> str:
    """14:02 on the day the action was requested, 2026-11-26 09:10 on another (local time)."""
    local = timezone.localtime(when)
    if day_of is not None and timezone.localtime(day_of).date() == local.date():
        return local.strftime("%H:%M")
    return local.strftime("%Y-%m-%d %H:%M")


def action_wording(action: Action, *, deliveries: list[Delivery], now) -> dict:
    """The action's steps as they happened, never more: "Card block requested 14:02 ·
    delivered 14:02 · confirmed by Core banking 14:03"; "requested 14:02 · not delivered yet";
    "failed: <reason>"; and whether it is past its deadline unconfirmed."""
    start = action.requested_at
    parts = [f"{action.label} requested {_at(start)}"]
    if action.delivered_at:
        parts.append(f"delivered {_at(action.delivered_at, day_of=start)}")
    elif action.state in Action.OPEN:
        if not deliveries:
            parts.append("not delivered: no endpoint subscribes to it")
        else:
            retrying = [d for d in deliveries if d.state == Delivery.State.RETRYING]
            if retrying:
                d = retrying[0]
                why = f"HTTP {d.last_status}" if d.last_status else (d.last_error or "no answer")
                parts.append(f"not delivered yet (attempt {d.attempts} failed: {why}; "
                             f"next {_at(d.next_attempt_at, day_of=start)})")
            else:
                parts.append("not delivered yet")
    if action.state == Action.State.CONFIRMED:
        parts.append(f"confirmed by {action.resolved_by_name} {_at(action.resolved_at, day_of=start)}")
    elif action.state == Action.State.FAILED:
        by = f" ({action.resolved_by_name})" if action.resolved_by_name else ""
        parts.append(f"failed{by}: {action.failure_reason}")
    overdue = action.is_overdue(now)
    return {"action": action, "text": " · ".join(parts), "overdue": overdue,
            "deadline": _at(action.deadline_at, day_of=start), "reference": action.external_reference}


def case_actions_rows(case, *, now=None) -> list[dict]:
    now = now or timezone.now()
    actions = list(Action.objects.filter(case=case).select_related("event").order_by("requested_at", "pk"))
    by_event: dict[str, list[Delivery]] = {}
    for d in Delivery.objects.filter(event_id__in=[a.event_id for a in actions]).order_by("pk"):
        by_event.setdefault(d.event_id, []).append(d)
    return [action_wording(a, deliveries=by_event.get(a.event_id, []), now=now) for a in actions]


def case_actions_context(case) -> dict:
    rows = case_actions_rows(case)
    return {"case": case, "rows": rows, "open": any(r["action"].state in Action.OPEN for r in rows),
            "resolvable": [r for r in rows if r["action"].state != Action.State.CONFIRMED]}


@register.inclusion_tag("case_actions/_case_actions.html", takes_context=True)
def case_actions(context, case):
    return {**case_actions_context(case), "csrf_token": context.get("csrf_token")}
