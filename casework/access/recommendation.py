"""What the access agents recommend, for the dashboard's agreement with people: the latest
advisory report's recommendation (AdvisoryReport.OUTCOME is the outcome each proposes)."""

from __future__ import annotations

from django.db.models import F

from casework.access.models import AdvisoryReport
from casework.cases.types import Recommendation


def _records(case_ref):
    return (AdvisoryReport.objects.filter(mutation__case_id=case_ref).annotate(rec=F("recommendation"))
            .order_by("-created_at", "-id"))


RECOMMENDATION = Recommendation(
    records=_records,
    agrees={rec: (outcome,) for rec, outcome in AdvisoryReport.OUTCOME.items()},
    labels=dict(AdvisoryReport.Recommendation.choices),
)
