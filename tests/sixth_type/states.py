"""The warranty claim's lifecycle, in one table.

    Received -> Being assessed -> Assessed (the assessor recommends; a person decides)
    any of these -> Decided (repair or refuse: only a person)
"""

from __future__ import annotations

from django.db import models

from casework.cases.lifecycle.table import AGENT, PERSON, SYSTEM, Lifecycle, State, move


class WarrantyStatus(models.TextChoices):
    RECEIVED = "received", "Received"
    ASSESSING = "assessing", "Being assessed"
    ASSESSED = "assessed", "Assessed"
    DECIDED = "decided", "Decided"


S = WarrantyStatus

WARRANTY_LIFECYCLE = Lifecycle(
    key="warranty_claim",
    label="Warranty claim (test-only type)",
    record="warranty.WarrantyClaim",
    field="status",
    initial=S.RECEIVED,
    audit_action="warranty.status_changed",
    states=(
        State(S.RECEIVED, S.RECEIVED.label, "The claim arrived; the assessor is queued.", "new"),
        State(S.ASSESSING, S.ASSESSING.label, "The assessor is reading the claim.", "in_progress"),
        State(S.ASSESSED, S.ASSESSED.label, "The assessor recommends repair or refusal; a person decides.",
              "awaiting_decision"),
        State(S.DECIDED, S.DECIDED.label, "A person decided; the case is closed.", "closed", final=True),
    ),
    transitions=tuple(
        move(S.RECEIVED, S.ASSESSING, SYSTEM, note="the assessor's run started")
        + move(S.ASSESSING, S.ASSESSED, AGENT, note="the assessor gave its verdict")
        + move([S.RECEIVED, S.ASSESSING, S.ASSESSED], S.DECIDED, PERSON, note="only a person decides")
    ),
)


def warranty_transition(*, actor, claim, to: str, reason: str = "", save: tuple[str, ...] = ()):
    from casework.cases.lifecycle.services import lifecycle_transition

    return lifecycle_transition(actor=actor, lifecycle=WARRANTY_LIFECYCLE, record=claim, to=to, reason=reason,
                                save=save)
