"""What the release detective recommends, for the dashboard's agreement with people: the
latest risk report's severity. High recommends not shipping (blocked or deferred), low
shipping; medium is no clear recommendation."""

from __future__ import annotations

from casework.cases.types import Recommendation, recommends
from casework.releases.models import RiskReport


def _records(case_ref):
    return (RiskReport.objects.filter(release__case_id=case_ref)
            .annotate(rec=recommends("severity", {"hold": ("high",), "ship": ("low",)}))
            .order_by("-filed_at", "-id"))


RECOMMENDATION = Recommendation(
    records=_records,
    agrees={"hold": ("no_go", "deferred"), "ship": ("go",)},
    labels={"hold": "Hold (high risk)", "ship": "Ship (low risk)"},
)
