"""The release assessment's lifecycle, in one table (seed 004).

    Received -> Being assessed -> Report filed (the detective recommends; a release manager decides)
                               -> Assessment failed (nothing was assessed; assess again, or decide)
             (Assess again, from either: Being assessed)
    any of these -> Decided (go, no-go or deferred: only a person, a release manager or an admin)

The system starts the assessment (the detective's run picked up), the detective files its
report or fails (a provider error, no report, a run that stopped), a person asks for it
again, and only a person decides. Every move goes through `release_transition` (the shared
lifecycle_transition over RELEASE_LIFECYCLE): audited as `release.status_changed`, with the
shared Case.status brought along unless the case is closed. "Decided" comes with a person's
close, so it says Closed (only a person enters it).
"""

from __future__ import annotations

from django.db import models

from casework.cases.lifecycle.table import AGENT, PERSON, SYSTEM, Lifecycle, State, move


class ReleaseStatus(models.TextChoices):
    RECEIVED = "received", "Received"
    PENDING = "pending", "Being assessed"
    FILED = "filed", "Report filed"
    FAILED = "failed", "Assessment failed"
    DECIDED = "decided", "Decided"


S = ReleaseStatus
OPEN = (S.RECEIVED, S.PENDING, S.FILED, S.FAILED)

RELEASE_LIFECYCLE = Lifecycle(
    key="release_risk",
    label="Release risk (seed 004)",
    record="releases.Release",
    field="assessment",
    initial=S.RECEIVED,
    audit_action="release.status_changed",
    states=(
        State(S.RECEIVED, S.RECEIVED.label, "CI posted the release; the detective is queued and has not started.",
              "new"),
        State(S.PENDING, S.PENDING.label,
              "The detective is reading the release summary and test details and will file one report.",
              "in_progress"),
        State(S.FILED, S.FILED.label,
              "The detective filed its risk report (never below what the tests and metrics show: code raises "
              "it); it recommends, a release manager decides.", "awaiting_decision"),
        State(S.FAILED, S.FAILED.label,
              "The detective failed (a provider error, no report, a run that stopped): nothing was assessed. "
              "Assess again, or decide without it.", "in_progress"),
        State(S.DECIDED, S.DECIDED.label,
              "A release manager (or an admin) decided go, no-go or deferred, with a reason; the case is closed.",
              "closed", final=True),
    ),
    transitions=tuple(
        move(S.RECEIVED, S.PENDING, SYSTEM, note="the detective's run started")
        + move([S.FILED, S.FAILED], S.PENDING, PERSON, note="a person asked to assess again")
        + move(S.PENDING, S.FILED, AGENT, note="the detective filed its report")
        + move([S.RECEIVED, S.PENDING], S.FAILED, AGENT, SYSTEM,
               note="the detective failed, or its run failed or stopped")
        + move(OPEN, S.DECIDED, PERSON, note="only a person decides (go, no-go, deferred)")
    ),
)


def release_transition(*, actor, release, to: str, reason: str = "", save: tuple[str, ...] = ()):
    """Move a release's assessment to `to`, or refuse (a Conflict, 409, naming both states): the
    shared lifecycle_transition over RELEASE_LIFECYCLE. Returns the locked, updated release."""
    from casework.cases.lifecycle.services import lifecycle_transition

    return lifecycle_transition(actor=actor, lifecycle=RELEASE_LIFECYCLE, record=release, to=to, reason=reason,
                                save=save)
