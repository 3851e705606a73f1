"""An action's lifecycle (Action.state): what a decision asked another system to do, and how
far it got. Drawn at /lifecycles/ with the others; written only by
casework.cases.lifecycle.services.lifecycle_transition (casework/cases/actions/services.py)."""

from __future__ import annotations

from casework.cases.lifecycle import PERSON, SYSTEM, Fact, Lifecycle, State, move

REQUESTED, DELIVERED, CONFIRMED, FAILED = "requested", "delivered", "confirmed", "failed"

ACTION_LIFECYCLE = Lifecycle(
    key="action",
    label="Action (what a decision asked another system to do)",
    record="outbox.Action",
    field="state",
    initial=REQUESTED,
    audit_action="action.state_changed",
    # case_status "": an action's progress never moves the case (the decision closed it).
    states=(
        State(REQUESTED, "Requested", "Decided here and written to the outbox; no receiver has taken it yet."),
        State(DELIVERED, "Delivered", "An endpoint answered 2xx to its event; nobody has said it was done.",
              claim="the other system received the event",
              fact=Fact("outbox.Delivery", "an endpoint's 2xx answer to the action's event (a delivered Delivery)",
                        holds=lambda d: d.state == "delivered")),
        State(CONFIRMED, "Confirmed", "The system that carried it out said so (signed callback), or a person did.",
              final=True, claim="the other system carried it out",
              fact=Fact("outbox.Action", "a signed callback verified against the endpoint's secret, or a named "
                        "person's word, recorded on the action (resolved_via / resolved_by)",
                        holds=lambda a: bool(a.resolved_via_id or a.resolved_by_id))),
        State(FAILED, "Failed", "Its delivery died, or the system (or a person) said it could not be done."),
    ),
    transitions=tuple(
        move(REQUESTED, DELIVERED, SYSTEM, note="an endpoint answered 2xx")
        + move(FAILED, DELIVERED, SYSTEM, note="a replayed delivery got through")
        + move([REQUESTED, DELIVERED, FAILED], CONFIRMED, SYSTEM, PERSON,
               note="signed callback from the system that did it, or a person")
        + move(REQUESTED, FAILED, SYSTEM, PERSON, note="every delivery dead, or the system says it failed")
        + move(DELIVERED, FAILED, SYSTEM, PERSON, note="the system, or a person, says it failed")
    ),
)
