"""Every write to a claim: it arrives (warranty_claim_submit), the assessor starts and gives its
verdict (from the pipeline), a person decides (the shared close; events.py follows it)."""

from __future__ import annotations

from django.db import transaction

from agents.tasks import pipeline_enqueue
from audit.services import audit_record
from casework.cases.services import case_create
from casework.entities.extraction import entities_extract
from tests.sixth_type.models import WarrantyClaim
from tests.sixth_type.states import WarrantyStatus, warranty_transition

PIPELINE = "warranty"


@transaction.atomic
def warranty_claim_submit(*, actor, serial_number: str, product: str, defect: str,
                          months_since_purchase: int) -> WarrantyClaim:
    """Open the claim's WAR case, save the claim, queue the assessor (on commit)."""
    case = case_create(actor=actor, case_type="warranty_claim", title=f"{product} {serial_number}: {defect}"[:200])
    claim = WarrantyClaim(case=case, serial_number=serial_number, product=product, defect=defect,
                          months_since_purchase=months_since_purchase)
    claim.full_clean(exclude=["case"])
    claim.save()
    entities_extract(case=case)
    audit_record(actor=actor, action="warranty.submitted", case=case, obj=claim,
                 data={"serial_number": serial_number, "product": product})
    pipeline_enqueue(case=case, pipeline=PIPELINE, mode="assess", actor=actor, initial_state={"claim_id": claim.pk})
    return claim


def warranty_assessment_started(*, claim: WarrantyClaim) -> None:
    if claim.status == WarrantyStatus.RECEIVED:
        warranty_transition(actor="system", claim=claim, to=WarrantyStatus.ASSESSING, reason="The assessor started.")


@transaction.atomic
def warranty_verdict_file(*, claim_id: int, verdict: str, reason: str) -> WarrantyClaim:
    claim = WarrantyClaim.objects.select_related("case").get(pk=claim_id)
    claim.verdict, claim.verdict_reason = verdict, reason
    return warranty_transition(actor="agent:warranty_assessor", claim=claim, to=WarrantyStatus.ASSESSED,
                               reason=f"{verdict}: {reason}"[:1000], save=("verdict", "verdict_reason"))
