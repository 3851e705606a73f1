"""A TXN case decided "fraud" marks its transaction as confirmed fraud."""

from __future__ import annotations

from django.dispatch import receiver

from casework.cases.signals import case_closed


@receiver(case_closed, dispatch_uid="txn_mark_fraud_on_close")
def _mark_fraud(sender, case, decision, actor, **kwargs) -> None:
    if case.case_type != "transaction_investigation" or decision.outcome != "fraud":
        return
    from casework.transactions.models import Investigation
    from casework.transactions.services import transaction_mark_fraud

    investigation = Investigation.objects.select_related("case", "transaction").filter(case=case).first()
    if investigation is not None:
        transaction_mark_fraud(actor=actor, investigation=investigation)
