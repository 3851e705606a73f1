"""What a fraud alert names (casework.entities): its account, and the devices and IP
addresses the account was seen on (AccountLink, from the alerts that reported them)."""

from __future__ import annotations

from casework.cases.types import Entities, Found


def fraud_entities(case) -> list[Found]:
    alert = getattr(case, "fraud_alert", None)
    if alert is None:
        return []
    account = alert.account
    found = [Found("account", account.account_id, "account_id")]
    for kind, value in account.links.order_by("id").values_list("kind", "value")[:50]:
        found.append(Found("device" if kind == "device" else "ip", value,
                           "device_ids" if kind == "device" else "ip_addresses"))
    return found


ENTITIES = Entities(extract=fraud_entities, fraud_outcomes=("confirmed_fraud",))
