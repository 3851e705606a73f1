"""What the transaction agents recommend, for the dashboard's agreement with people: the
completed investigation's severity, which drives its recommendations (block the card at high
or critical, no action at low; medium asks the cardholder first: no clear recommendation)."""

from __future__ import annotations

from django.db.models import Case, CharField, Value, When

from casework.cases.types import Recommendation
from casework.transactions.models import Investigation


def _records(case_ref):
    return (Investigation.objects.filter(case_id=case_ref, status=Investigation.Status.COMPLETED)
            .annotate(rec=Case(When(severity__in=["CRITICAL", "HIGH"], then=Value("fraud")),
                               When(severity="LOW", then=Value("not_fraud")), default=Value(None),
                               output_field=CharField()))
            .order_by("-id"))


RECOMMENDATION = Recommendation(
    records=_records,
    agrees={"fraud": ("fraud",), "not_fraud": ("not_fraud",)},
    labels={"fraud": "Fraud (high/critical severity)", "not_fraud": "Not fraud (low severity)"},
)
