"""The fraud demo loader: fifty alerts from demo_data.py, ten of them decided."""

from __future__ import annotations

from django.db import transaction

from casework.fraud.demo_data import demo_alerts
from casework.fraud.models import Alert


def demo_load_fraud(*, users: dict) -> int:
    """Create the demo alerts, decide about ten of them, and store their knowledge patterns.

    Idempotent: if any fraud alert exists, it creates nothing. Each new alert enqueues its
    pipeline on commit, as any alert does; the decided ones are closed straight away so
    that similarity has history from the start.
    """
    from casework.cases.services import case_assign, case_close
    from casework.fraud.services import alert_create, pattern_capture

    if Alert.objects.exists():
        return 0
    investigator = users.get("alice") or "system"
    created = 0
    for demo in demo_alerts():
        with transaction.atomic():
            data = dict(demo.row)
            if demo.archetype == "mule_network":
                # The ring is run from a few phones: shared devices link its accounts, so a new
                # member's network finding counts the ones already confirmed as fraud.
                data["device_ids"] = ["DEV-RING-A1", "DEV-RING-A2"]
                data["ip_addresses"] = ["203.0.113.17"]
            alert = alert_create(actor="system", data=data, via="demo")
            created += 1
            if demo.decision is None:
                continue
            outcome, reason, pattern = demo.decision
            case = case_assign(actor=investigator, case=alert.case, assignee=investigator) \
                if investigator != "system" else alert.case
            decision = case_close(actor=investigator, case=case, outcome=outcome, reason=reason)
            pattern_capture(decision=decision, pattern=pattern, actor="system")
    return created
