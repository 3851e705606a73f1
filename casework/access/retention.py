"""An access review's special-category data, for retention (casework.privacy): the absence
details of an employee's claim (casework/access/special.py: which absence it was, its dates, the
explanation and the records check that quote them) and the agents' prompts and answers that
quote them. The case, the change, the manager's verdict and the decision stay."""

from __future__ import annotations

from casework.access.models import EmployeeClaim
from casework.access.special import ABSENCE_CLAIMS
from casework.cases.types import Retention

REMOVED = "Absence details removed under the retention policy."


def claims_purge(case) -> dict[str, int]:
    # Which absence it was (sick leave or vacation) is itself a health fact: the claim becomes
    # "other", with the explanation saying why.
    # claim_type is encrypted at rest (casework.security.fields): the database cannot compare it,
    # so the case's few claims are read and told apart here.
    ids = [claim.pk for claim in EmployeeClaim.objects.filter(request__mutation__case=case).only("pk", "claim_type")
           if claim.claim_type in ABSENCE_CLAIMS]
    count = EmployeeClaim.objects.filter(pk__in=ids).update(claim_type=EmployeeClaim.ClaimType.OTHER, period_start=None, period_end=None,
                          explanation=REMOVED, validation={})
    return {"absence details": count}


def claims_held(case) -> dict:
    return {"claims": list(EmployeeClaim.objects.filter(request__mutation__case=case).values(
        "claim_type", "period_start", "period_end", "explanation", "submitted_at", "validation_status"))}

RETENTION = Retention(
    purge=claims_purge, held=claims_held, shared=("agent_calls",),
    describe="Absence details (kind, dates, explanation, records check) and the agents' prompts and answers "
             "quoting them; the case, the change, the verdict and the decision stay.")
