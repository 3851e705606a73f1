"""Bulk actions on queue rows: assign, set priority, close with one outcome and reason.

Each case goes through the same service call as the single action on its page (its own
transaction, its own audit entries; a close, the decision service its case type registered,
casework.cases.services.case_decide), so that one refused case does not undo the others.
A case that cannot take the action is skipped and named, with the reason, in the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError

from audit.services import audit_record
from casework.cases import services
from casework.cases.models import Case
from casework.cases.types import CASE_TYPES
from casework.cases.visibility import cases_visible_to
from casework.errors import DomainError, error_text

BULK_MAX = 200
ACTIONS = {
    "assign": "Assign",
    "priority": "Set priority",
    "close": "Close",
}


@dataclass
class BulkResult:
    action: str
    done: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def bulk_describe(*, action: str, count: int, assignee: User | None = None, priority: str = "",
                  outcome: str = "") -> str:
    """The confirmation's question, naming the count: "Close 30 cases?"."""
    cases = f"{count} case{'' if count == 1 else 's'}"
    if action == "assign":
        return f"Assign {cases} to {assignee.get_username() if assignee else 'nobody'}?"
    if action == "priority":
        return f"Set the priority of {cases} to {priority}?"
    return f"Close {cases} as {outcome_label(outcome)}?"


def outcome_label(outcome: str) -> str:
    labels = {key: label for ct in CASE_TYPES.values() for key, label in ct.outcomes}
    return labels.get(outcome, outcome)


def bulk_outcome_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """Outcomes grouped by case type, for the bulk form's select."""
    return [(ct.label, list(ct.outcomes)) for ct in CASE_TYPES.values()]


# --- closing: the type's own decision service where it registered one ---------------------

def _close_one(*, actor, case: Case, outcome: str, reason: str):
    if case.is_closed:
        raise DomainError("already closed")
    if outcome not in dict(case.type_info.outcomes):
        raise ValidationError(f"“{outcome_label(outcome)}” is not an outcome of a {case.type_info.label.lower()}.")
    return services.case_decide(actor=actor, case=case, outcome=outcome, reason=reason)


def bulk_validate(*, action: str, references: list[str], priority: str = "", outcome: str = "",
                  reason: str = "") -> list[str]:
    """The rules of a bulk action's arguments, for the service, the queue's form and the API:
    every broken one is named in one ValidationError (field: message); the references come back
    trimmed, upper-cased and without repeats, in the order given."""
    errors: dict[str, str] = {}
    if action not in ACTIONS:
        errors["action"] = f"Choose one of: {', '.join(ACTIONS)}."
    references = list(dict.fromkeys(r.strip().upper() for r in references if r and r.strip()))
    if not references:
        errors["references"] = "Select at least one case."
    elif len(references) > BULK_MAX:
        errors["references"] = f"At most {BULK_MAX} cases at a time."
    if action == "priority" and priority not in Case.Priority.values:
        errors["priority"] = f"Choose a priority: {', '.join(Case.Priority.values)}."
    if action == "close":
        if not any(outcome in dict(ct.outcomes) for ct in CASE_TYPES.values()):
            errors["outcome"] = "Choose an outcome."
        if not (reason or "").strip():
            errors["reason"] = "Give a reason for the decision."
    if errors:
        raise ValidationError(errors)
    return references


def _running(cases: list[Case]) -> set[int]:
    """Cases whose agents are still working: closing them would throw their work away unseen."""
    from agents.models import AgentRun

    return set(AgentRun.objects.filter(case__in=cases, status__in=AgentRun.ACTIVE)
               .values_list("case_id", flat=True))


def cases_bulk_apply(*, actor: User, references: list[str], action: str, assignee: User | None = None,
                     priority: str = "", outcome: str = "", reason: str = "") -> BulkResult:
    """Apply one action to each case, one service call and transaction per case.

    Steps: validate the action's arguments once (bulk_validate: a ValidationError naming each
    broken field); fetch the cases in the order given; for each, call the single action's
    service and record it as done, or record why it was skipped; write one summary audit entry
    naming both lists."""
    references = bulk_validate(action=action, references=references, priority=priority, outcome=outcome,
                               reason=reason)
    reason = (reason or "").strip()

    # Only cases the actor may see: any other is "no such case", as its page would answer.
    by_ref = {c.reference: c for c in cases_visible_to(actor, Case.objects.select_related("assignee"))
              .filter(reference__in=references)}
    result = BulkResult(action=action)
    running = _running(list(by_ref.values())) if action == "close" else set()
    for ref in references:
        case = by_ref.get(ref)
        if case is None:
            result.skipped.append((ref, "no such case"))
            continue
        if case.pk in running:
            result.skipped.append((ref, "the agents are still working on it"))
            continue
        try:
            if action == "assign":
                services.case_assign(actor=actor, case=case, assignee=assignee)
            elif action == "priority":
                services.case_set_priority(actor=actor, case=case, priority=priority,
                                           reason=reason or "Set in bulk from the queue.")
            else:
                _close_one(actor=actor, case=case, outcome=outcome, reason=reason)
        except (DomainError, ValidationError, PermissionDenied) as exc:
            result.skipped.append((ref, error_text(exc)))
        else:
            result.done.append(ref)
    audit_record(actor=actor, action="cases.bulk_applied",
                 data={"action": action, "done": result.done, "skipped": [list(s) for s in result.skipped],
                       "assignee": assignee.get_username() if assignee else None,
                       "priority": priority or None, "outcome": outcome or None, "reason": reason[:500]})
    return result
