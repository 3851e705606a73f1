"""The outbox's word on an action event's delivery, turned into the action's state."""

from __future__ import annotations

from django.dispatch import receiver

from casework.outbox.models import Delivery
from casework.outbox.signals import action_delivery_answered


@receiver(action_delivery_answered, sender=Delivery, dispatch_uid="case_actions_delivery_answered")
def _on_delivery_answered(sender, delivery, ok, now, **kwargs):
    from casework.cases.actions.services import action_delivery_recorded

    action_delivery_recorded(delivery=delivery, ok=ok, now=now)
