"""What the transaction agents recommend, for the dashboard's agreement with people: the
completed investigation's severity, which drives its recommendations (block the card at high
or critical, no action at low; medium asks the cardholder first: no clear recommendation)."""

from __future__ import annotations

from casework.cases.types import Recommendation, recommends
from casework.transactions.models import Investigation


def _records(case_ref):
    return (Investigation.objects.filter(case_id=case_ref, status=Investigation.Status.COMPLETED)
            .annotate(rec=recommends("severity", {"fraud": ("CRITICAL", "HIGH"), "not_fraud": ("LOW",)}))
            .order_by("-id"))


RECOMMENDATION = Recommendation(
    records=_records,
    agrees={"fraud": ("fraud",), "not_fraud": ("not_fraud",)},
    labels={"fraud": "Fraud (high/critical severity)", "not_fraud": "Not fraud (low severity)"},
)
