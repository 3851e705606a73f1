"""Reads, with related rows fetched up front, and the access checks for managers' requests."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.utils import timezone

from casework.access.models import (
    AgentMessage,
    Employee,
    EmployeeClaim,
    HRMutation,
    InfoRequest,
)
from casework.access.states import WORKING, AccessStatus
from casework.people.roles import is_manager

MUTATION_RELATED = ("case", "case__assignee", "changed_by", "changed_by__manager", "changed_for", "system",
                    "access_level", "manager", "manager__user")


def mutation_for_case(case) -> HRMutation | None:
    return HRMutation.objects.select_related(*MUTATION_RELATED).filter(case=case).first()


def mutation_requests(mutation: HRMutation) -> QuerySet[InfoRequest]:
    return (InfoRequest.objects.filter(mutation=mutation)
            .select_related("recipient", "claim__colleague", "verdict__decided_by")
            .prefetch_related("notifications").order_by("sent_at", "id"))


def mutation_messages(case) -> QuerySet[AgentMessage]:
    return AgentMessage.objects.filter(case=case).order_by("timestamp", "id")


def mutation_overview(case) -> dict | None:
    """Everything the case page's access tabs show, read once per page."""
    cached = getattr(case, "_access_overview", None)
    if cached is not None:
        return cached
    mutation = mutation_for_case(case)
    if mutation is None:
        return None
    requests = list(mutation_requests(mutation))
    claim_request = next((r for r in reversed(requests) if r.kind == InfoRequest.Kind.EMPLOYEE
                          and hasattr(r, "claim")), None)
    verdict_request = next((r for r in reversed(requests) if r.kind == InfoRequest.Kind.MANAGER
                            and hasattr(r, "verdict")), None)
    report = mutation.reports.first()
    open_manager = next((r for r in reversed(requests) if r.kind == InfoRequest.Kind.MANAGER
                         and not r.cancelled_at), None)
    overview = {
        "mutation": mutation,
        "status": AccessStatus(mutation.status),
        "working": mutation.status in WORKING and not case.is_closed,
        "path": _path(mutation),
        "history": mutation_status_history(mutation),
        "rights_check": mutation.rights_checks.first(),
        "requests": requests,
        "claim": claim_request.claim if claim_request else None,
        "verdict": verdict_request.verdict if verdict_request else None,
        "report": report,
        "preselect": decision_preselect(mutation, report),
        "overrides": mutation_overrides(case),
        "validator": open_manager.recipient if open_manager else None,
        "may_resend": mutation.status in (AccessStatus.USER_REQUEST_QUEUED, AccessStatus.AWAITING_USER_RESPONSE,
                                          AccessStatus.LINK_EXPIRED, AccessStatus.USER_REQUEST_FAILED)
        and not case.is_closed,
        "reports": list(mutation.reports.all()),
        "messages": list(mutation_messages(case)),
        "lanes": LANES,
        "now": timezone.now(),
    }
    case._access_overview = overview
    return overview


def decision_preselect(mutation: HRMutation, report) -> str:
    """The outcome the decision form pre-selects: the report's, as the case's facts allow it
    (guards.recommendation_guard; a report stored before the guard, or imported, may say
    accept on a denied change), or none without a report."""
    from casework.access.guards import recommendation_guard
    from casework.access.models import AdvisoryReport

    if report is None:
        return ""
    recommendation, _ = recommendation_guard(mutation=mutation, recommendation=report.recommendation)
    return AdvisoryReport.OUTCOME[recommendation]


def mutation_overrides(case) -> list[dict]:
    """Where code set an agent's answer aside on this case (guards.guard_override_record),
    oldest first."""
    from audit.models import AuditEntry
    from casework.access.guards import OVERRIDE_ACTION

    return [{**e["data"], "at": e["timestamp"]} for e in
            AuditEntry.objects.filter(case_id=case.pk, action=OVERRIDE_ACTION).order_by("id")
            .values("data", "timestamp")[:50]]


def _path(mutation: HRMutation) -> list[dict]:
    """The statuses this mutation went through, from its audit trail, oldest first."""
    from audit.models import AuditEntry

    seen = [AccessStatus.PENDING.value]
    for data in (AuditEntry.objects.filter(case_id=mutation.case_id, action="access.status_changed")
                 .order_by("id").values_list("data", flat=True)):
        seen.append(data.get("to"))
    if mutation.status not in seen:  # imported history
        seen.append(mutation.status)
    return [{"status": s, "label": AccessStatus(s).label, "current": i == len(seen) - 1}
            for i, s in enumerate(seen) if s in AccessStatus.values]


def mutation_status_history(mutation: HRMutation) -> list[dict]:
    """Every status the access change went through: status, label, when and by whom, oldest
    first (from its audit trail: one indexed query)."""
    from audit.models import AuditEntry

    entries = (AuditEntry.objects.filter(case_id=mutation.case_id, action="access.status_changed")
               .order_by("id").values("data", "timestamp", "actor"))
    history = [{"status": e["data"].get("to"), "label": e["data"].get("to_label") or e["data"].get("to"),
                "from": e["data"].get("from"), "at": e["timestamp"], "by": e["actor"],
                "reason": e["data"].get("reason", "")} for e in entries]
    if not history or history[-1]["status"] != mutation.status:  # imported history
        history.append({"status": mutation.status, "label": mutation.status_label, "from": None,
                        "at": mutation.updated_at, "by": "import", "reason": ""})
    return history


# Columns of the message sequence, in the seed's order.
LANES = ["Casework", "InvestigationAgent", "RightsCheckAgent", "RequestForInformationAgent", "AdvisoryAgent"]


def message_rows(messages: list[AgentMessage]) -> list[dict]:
    """Each message as an arrow between two lifelines: lane i's lifeline is grid line 2i
    of a ten-column grid (two columns per lane)."""
    rows = []
    for message in messages:
        start = LANES.index(message.sender) + 1 if message.sender in LANES else 1
        end = LANES.index(message.receiver) + 1 if message.receiver in LANES else len(LANES)
        rows.append({"message": message, "left": 2 * min(start, end), "right": 2 * max(start, end),
                     "rightward": end >= start, "reply": message.reply_to_id is not None})
    return rows


# --- managers ---------------------------------------------------------------------------------

def manager_employee(user) -> Employee | None:
    if not getattr(user, "is_authenticated", False):
        return None
    return Employee.objects.filter(user=user).first()


def inbox_for(user) -> dict:
    """The validation requests addressed to this manager: open ones first, then answered."""
    if not is_manager(user):
        raise PermissionDenied("Only managers have an inbox of validation requests.")
    base = (InfoRequest.objects.filter(kind=InfoRequest.Kind.MANAGER, recipient__user=user)
            .select_related("mutation__case", "mutation__changed_by", "mutation__changed_for", "mutation__system",
                            "mutation__access_level", "mutation__manager", "recipient", "verdict")
            .prefetch_related(Prefetch("mutation__requests",
                                       queryset=InfoRequest.objects.filter(kind=InfoRequest.Kind.EMPLOYEE)
                                       .select_related("claim"))))
    return {
        "open": list(base.filter(answered_at__isnull=True, cancelled_at__isnull=True).order_by("sent_at")),
        "answered": list(base.filter(answered_at__isnull=False).order_by("-answered_at")[:25]),
        "withdrawn": list(base.filter(answered_at__isnull=True, cancelled_at__isnull=False)
                          .order_by("-cancelled_at")[:10]),
    }


def request_get_for_manager(user, pk: int) -> InfoRequest:
    """A validation request, if it is addressed to this manager (404 if there is none, 403 if
    it is someone else's)."""
    if not is_manager(user):
        raise PermissionDenied("Only managers answer validation requests.")
    request = (InfoRequest.objects.select_related(
        "recipient", "mutation__case", "mutation__changed_by", "mutation__changed_for", "mutation__system",
        "mutation__access_level", "mutation__manager").filter(pk=pk, kind=InfoRequest.Kind.MANAGER).first())
    if request is None:
        raise Http404("No such validation request.")
    if request.recipient.user_id != user.pk:
        raise PermissionDenied("This validation request is addressed to another manager.")
    return request


def request_context(request: InfoRequest) -> dict:
    """What a manager sees with a request: the change, the rights-check evidence and the
    employee's claim with its validation."""
    mutation = request.mutation
    claim = (EmployeeClaim.objects.filter(request__mutation=mutation).select_related("colleague", "request")
             .order_by("-submitted_at").first())
    return {"req": request, "mutation": mutation, "rights_check": mutation.rights_checks.first(), "claim": claim,
            "verdict": getattr(request, "verdict", None) if request.answered_at else None}


# --- the navigation ----------------------------------------------------------------------------

def open_inbox_count(user) -> int:
    if not getattr(user, "is_authenticated", False):
        return 0
    return InfoRequest.objects.filter(kind=InfoRequest.Kind.MANAGER, recipient__user=user,
                                      answered_at__isnull=True, cancelled_at__isnull=True).count()


