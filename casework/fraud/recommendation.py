"""What the fraud agents recommend, for the dashboard's agreement with people: the latest
successful orchestrator call's risk level (the call's output_verdict, kept in clear, since its
output is encrypted at rest). High or critical recommends confirming fraud; low recommends
clearing the alert (marked legit or dismissed); medium is no clear recommendation."""

from __future__ import annotations

from agents.models import AgentCall
from casework.cases.types import Recommendation, recommends


def _records(case_ref):
    return (AgentCall.objects.filter(run__case_id=case_ref, key="orchestrator", status="ok")
            .annotate(rec=recommends("output_verdict", {"fraud": ("high", "critical"), "clear": ("low",)}))
            .order_by("-id"))


RECOMMENDATION = Recommendation(
    records=_records,
    agrees={"fraud": ("confirmed_fraud",), "clear": ("legit", "false_positive")},
    labels={"fraud": "Fraud (high/critical risk)", "clear": "Not fraud (low risk)"},
)
