"""The fraud alert's lifecycle, in one table (seed 000).

    Received -> Being assessed -> Assessed (the orchestrator's verdict over at least one finished
                                          specialist; a person decides)
                               -> Assessment failed (the orchestrator, the run, or all five
                                  specialists failed: the rule-based factors stand in; a person looks)
             (Re-assess / Re-run all from either: Being assessed again)
    any of these -> Decided (a person closed the case) -> Knowledge captured
                                                        -> Knowledge capture failed -> (retry) Decided

Who moves it: the system starts an assessment (the run picked up: "being assessed"), the
orchestrator's answer makes it "assessed", the system records a failed assessment (the
orchestrator, or the whole run, failed or timed out); only a person decides; the knowledge
capture agent's stored pattern makes it "knowledge captured", and the system records a
capture that failed, which a person (or the system) may retry. Every move goes through
`alert_transition` (the shared lifecycle_transition over FRAUD_LIFECYCLE), which audits it as
`fraud.status_changed` and brings the shared Case.status along unless the case is closed.

The three decision states come with or after a person's close, so they say Closed: only a
person enters them from an open state (tests/cases/test_lifecycles.py holds every type to
that); the capture agent and the system move among them on the closed case.
"""

from __future__ import annotations

from django.db import models

from casework.cases.lifecycle.table import AGENT, PERSON, SYSTEM, Fact, Lifecycle, State, move


class AlertStatus(models.TextChoices):
    RECEIVED = "received", "Received"
    ASSESSING = "assessing", "Being assessed"
    ASSESSED = "assessed", "Assessed"
    ASSESSMENT_FAILED = "assessment_failed", "Assessment failed"
    DECIDED = "decided", "Decided"
    KNOWLEDGE_CAPTURED = "knowledge_captured", "Knowledge captured"
    CAPTURE_FAILED = "capture_failed", "Knowledge capture failed"


S = AlertStatus

# The outcomes a person may decide an alert with (key, label): the case type's outcomes
# (casework.fraud.apps) and the Decided state's meaning are both written from this.
OUTCOMES = (("confirmed_fraud", "Confirmed fraud"), ("legit", "Marked legit"),
            ("false_positive", "Dismissed as false positive"))
_OUTCOME_WORDS = ", ".join(label.lower() for _, label in OUTCOMES[:-1]) + f" or {OUTCOMES[-1][1].lower()}"


def specialist_finished(run) -> bool:
    """The fact "Assessed" rests on: the assessment run has at least one of the five
    specialists' findings (its own, or carried over from an earlier run of this alert)."""
    from casework.fraud.agents import SPECIALISTS

    results = (run.state or {}).get("results") or {}
    return any((results.get(key) or {}).get("output") is not None and not (results.get(key) or {}).get("error")
               for key in SPECIALISTS)

# The states an assessment run may start from, and those in which the case is still open.
ASSESSABLE = (S.RECEIVED, S.ASSESSED, S.ASSESSMENT_FAILED)
UNDECIDED = (S.RECEIVED, S.ASSESSING, S.ASSESSED, S.ASSESSMENT_FAILED)
DECISION_STATES = (S.DECIDED, S.KNOWLEDGE_CAPTURED, S.CAPTURE_FAILED)

_STATES = (
    State(S.RECEIVED, S.RECEIVED.label,
          "The alert opened its case; its assessment is queued and no agent has started.", "new"),
    State(S.ASSESSING, S.ASSESSING.label,
          "The five specialists and then the orchestrator are at work (a re-assessment: the "
          "orchestrator alone, over this alert's own specialist findings).", "in_progress"),
    State(S.ASSESSED, S.ASSESSED.label,
          "The orchestrator assessed the alert (risk, priority, summary) over the findings of the specialists "
          "that finished (at least one); it recommends, a person decides.",
          "awaiting_decision", claim="the agents assessed the alert's evidence",
          fact=Fact("agents.AgentRun", "the assessment run, with at least one of the five specialists finished "
                                       "(its findings saved, no error)", holds=specialist_finished)),
    State(S.ASSESSMENT_FAILED, S.ASSESSMENT_FAILED.label,
          "The orchestrator (or the whole run) failed or timed out, or all five specialists failed so the "
          "orchestrator had nothing to assess: nothing was concluded (its guess sets no priority). The "
          "rule-based risk factors stand in, the assignee (or every investigator) was told, and a person must look.",
          "in_progress"),
    State(S.DECIDED, S.DECIDED.label,
          f"A person decided ({_OUTCOME_WORDS}) and the case is closed; the "
          "knowledge capture agent is recording what it taught us. A duplicate merged into another alert's "
          "case stays here: it teaches nothing of its own (the survivor's decision does).", "closed"),
    State(S.KNOWLEDGE_CAPTURED, S.KNOWLEDGE_CAPTURED.label,
          "Decided (the case is closed), and the pattern it taught is stored in the captured patterns.", "closed",
          final=True),
    State(S.CAPTURE_FAILED, S.CAPTURE_FAILED.label,
          "Decided (the case is closed), but knowledge capture failed: no pattern was stored. A person "
          "may retry it.",
          "closed"),
)

FRAUD_LIFECYCLE = Lifecycle(
    key="fraud_alert",
    label="Fraud alert (seed 000)",
    record="fraud.Alert",
    field="status",
    initial=S.RECEIVED,
    audit_action="fraud.status_changed",
    states=_STATES,
    transitions=tuple(
        move(ASSESSABLE, S.ASSESSING, SYSTEM,
             note="an assessment run started (on the alert's arrival, or a person's Re-assess / Re-run all)")
        + move(S.ASSESSING, S.ASSESSED, AGENT, note="the orchestrator answered")
        + move([S.RECEIVED, S.ASSESSING], S.ASSESSMENT_FAILED, SYSTEM,
               note="the orchestrator or the run failed or timed out; people are told")
        + move(UNDECIDED, S.DECIDED, PERSON, note="only a person decides (closes the case)")
        + move([S.DECIDED, S.CAPTURE_FAILED], S.KNOWLEDGE_CAPTURED, AGENT, SYSTEM,
               note="the knowledge capture agent's pattern was stored (or a prepared one, by the demo)")
        + move(S.DECIDED, S.CAPTURE_FAILED, SYSTEM, note="knowledge capture failed; nothing was stored")
        + move(S.CAPTURE_FAILED, S.DECIDED, PERSON, SYSTEM, note="Retry knowledge capture")
    ),
)


def alert_transition(*, actor, alert, to: str, reason: str = "", fact=None):
    """Move a fraud alert to `to`, or refuse (a Conflict, 409, naming both states): the shared
    lifecycle_transition over FRAUD_LIFECYCLE (`fact`: the run "Assessed" rests on). Returns
    the locked, updated alert."""
    from casework.cases.lifecycle.services import lifecycle_transition

    return lifecycle_transition(actor=actor, lifecycle=FRAUD_LIFECYCLE, record=alert, to=to, reason=reason,
                                fact=fact)
