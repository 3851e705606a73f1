"""The access change's action event: the case was decided "Change rejected", and the system
the change was made on is asked to revert it (casework/cases/actions/services.py). Registered in the
outgoing webhooks' catalogue from AccessConfig.ready and sent by the decision effect below, in
the decision's transaction, whichever way the case was closed (the report tab, a bulk close,
the generic close or the API)."""

from __future__ import annotations

from casework.outbox.catalogue import DECISION, EventType, action_data

_EMPLOYEE = {"type": "object", "required": ["employee_id", "name"],
             "properties": {"employee_id": {"type": "string"}, "name": {"type": "string"}}}

REVERT_REQUESTED = EventType(
    "access.revert_requested", 1,
    "A person rejected an access change: undo it on its system (`revert` says how), then confirm "
    "(or report a failure) at `data.action.confirm_url`.",
    action_data(
        change={"type": "object",
                "required": ["mutation_id", "system", "change_type", "field", "old_value", "new_value", "changed_at",
                             "changed_by", "changed_for"],
                "properties": {
                    "mutation_id": {"type": "string"}, "system": {"type": "string"},
                    "change_type": {"type": "string", "enum": ["create", "update", "delete"]},
                    "field": {"type": "string"}, "old_value": {"type": "string"}, "new_value": {"type": "string"},
                    "changed_at": {"type": "string", "format": "date-time"},
                    "changed_by": _EMPLOYEE, "changed_for": _EMPLOYEE}},
        revert={"type": "object", "required": ["operation", "field", "value"],
                "description": "remove what was created, restore what was deleted, or set the field back.",
                "properties": {"operation": {"type": "string", "enum": ["remove", "restore", "set"]},
                               "field": {"type": "string"},
                               "value": {"type": "string", "description": "The value to restore or set."}}},
        decision=DECISION,
    ),
    action="Access revert",
)

REVERT_OUTCOMES = ("rejected",)
_OPERATION = {"create": "remove", "delete": "restore", "update": "set"}


def revert_on_decision(*, actor, case, decision) -> None:
    """Decision effect (casework.cases.types.case_type_register_decision_effect): a rejected
    change asks its system to revert it."""
    from casework.access.models import HRMutation
    from casework.cases.actions.services import action_request
    from casework.outbox.services import decision_data

    if decision.outcome not in REVERT_OUTCOMES:
        return
    mutation = (HRMutation.objects.select_related("system", "changed_by", "changed_for")
                .filter(case=case).first())
    if mutation is None:
        return

    def employee(e):
        return {"employee_id": e.employee_id, "name": e.name}

    action_request(actor=actor, type=REVERT_REQUESTED.name, case=case, data={
        "change": {"mutation_id": mutation.mutation_id, "system": mutation.system.code,
                   "change_type": mutation.change_type, "field": mutation.field_changed,
                   "old_value": mutation.old_value, "new_value": mutation.new_value,
                   "changed_at": mutation.changed_at.isoformat(),
                   "changed_by": employee(mutation.changed_by), "changed_for": employee(mutation.changed_for)},
        "revert": {"operation": _OPERATION[mutation.change_type], "field": mutation.field_changed,
                   "value": mutation.old_value},
        "decision": decision_data(decision),
    })
