"""What a transaction investigation names (casework.entities): the card account, the card (its
last four on that account: the data holds no BIN, and never a full number), the device and the
merchant. A case decided "fraud" flags them."""

from __future__ import annotations

from casework.cases.types import Entities, Found


def investigation_entities(case) -> list[Found]:
    investigation = getattr(case, "txn_investigation", None)
    if investigation is None:
        return []
    txn = investigation.transaction
    account_id = txn.account.account_id
    found = [Found("account", account_id, "transaction.account"),
             Found("card", f"{account_id}/{txn.card_last4}", "transaction.card_last4"),
             Found("merchant", txn.merchant, "transaction.merchant")]
    if txn.device_id:
        found.append(Found("device", txn.device_id, "transaction.device_id"))
    return found


ENTITIES = Entities(extract=investigation_entities, fraud_outcomes=("fraud",))
