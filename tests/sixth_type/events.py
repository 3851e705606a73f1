"""The claim's outgoing event: a person decided, and the repair shop is told (an action it
confirms), written in the decision's transaction by the decision effect below."""

from __future__ import annotations

from casework.outbox.catalogue import DECISION, EventType, action_data

WARRANTY_DECIDED = EventType(
    "warranty.decided", 1,
    "A person decided a warranty claim: `decision.outcome` repair or refuse; the repair shop acts on it.",
    action_data(
        claim={"type": "object", "required": ["serial_number", "product"],
               "properties": {"serial_number": {"type": "string"}, "product": {"type": "string"}}},
        decision=DECISION,
    ),
    action="Warranty decision",
)


def warranty_decided_on_decision(*, actor, case, decision) -> None:
    """Decision effect (casework.cases.types.case_type_register_decision_effect): the claim is
    decided, and the repair shop is asked to act."""
    from casework.cases.actions.services import action_request
    from casework.outbox.services import decision_data
    from tests.sixth_type.models import WarrantyClaim
    from tests.sixth_type.states import WarrantyStatus, warranty_transition

    claim = WarrantyClaim.objects.filter(case=case).first()
    if claim is None:
        return
    warranty_transition(actor=actor, claim=claim, to=WarrantyStatus.DECIDED,
                        reason=f"{decision.outcome_label}: {decision.reason}"[:1000])
    action_request(actor=actor, type=WARRANTY_DECIDED.name, case=case, data={
        "claim": {"serial_number": claim.serial_number, "product": claim.product},
        "decision": decision_data(decision),
    })
