"""The people's side of approvals: who is told, and the answers (which the runtime applies:
agents.runtime.pause.pause_answer validates, audits and resumes the run)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse

from agents.models import RunPause
from agents.runtime.pause import InvalidArguments, NotPending, pause_answer
from agents.runtime.pipeline import tool_find
from casework.cases.models import Case
from casework.cases.notifications.models import Notification
from casework.cases.notifications.services import notification_send
from casework.cases.sla import DONE_STATUSES
from casework.cases.visibility import people_who_may_see
from casework.errors import Conflict
from casework.people.roles import INVESTIGATOR, RELEASE_MANAGER

TEAM_NOTIFIED_MAX = 25


def _recipients(case: Case) -> list[User]:
    """The case's assignee; without one, the investigators of its team (who may see it and
    answer it: a manager in the team answers only requests addressed to them), admins aside."""
    if case.assignee_id is not None:
        return [case.assignee]
    return list(people_who_may_see(case).filter(groups__name__in=[INVESTIGATOR, RELEASE_MANAGER])
                .exclude(is_superuser=True).distinct()
                .order_by("username")[:TEAM_NOTIFIED_MAX])


@transaction.atomic
def approval_notify(*, pause: RunPause) -> int:
    """Tell the case's assignee (or its team) that an agent waits for an approval. Returns how
    many were told (none on a closed case)."""
    case = Case.objects.select_related("assignee").get(pk=pause.case_id)
    if case.status in DONE_STATUSES:
        return 0
    url = reverse("cases:detail", args=[case.reference]) + "#approvals"
    told = 0
    for user in _recipients(case):
        note = notification_send(
            actor="system", kind=Notification.Kind.APPROVAL, case=case, user=user,
            subject=f"{case.reference}: {pause.agent or 'an agent'} waits for your approval to run {pause.tool}",
            body=f"On {case.reference} ({case.title}), {pause.agent or 'an agent'} wants to run {pause.tool}. "
                 f"Its reason: {pause.reason[:300] or 'none given'}. Approve, edit or deny it from the case page "
                 "or the approvals inbox.",
            url=url)
        told += note is not None
    return told


def approval_decide(*, pause: RunPause, actor, approve: bool, arguments: dict | None = None,
                    reason: str = "") -> RunPause:
    """A person's answer, as a domain error the API and pages show: a bad edit is a 400 naming
    the field, an answer to an approval no longer pending a 409."""
    if pause.case is not None and pause.case.status in DONE_STATUSES:
        raise Conflict(f"{pause.case.reference} is closed: nothing waits for this approval.", code="case_closed")
    try:
        return pause_answer(pause=pause, actor=actor, approve=approve, arguments=arguments, reason=reason,
                            tool=tool_find(pause.run.pipeline, pause.tool))
    except InvalidArguments as exc:
        # 400 naming the field: "reason", "arguments", or "arguments.<the tool's argument>".
        field = exc.field if exc.field in ("reason", "arguments") else f"arguments.{exc.field}"
        raise ValidationError({field: [str(exc)]}) from exc
    except NotPending as exc:
        raise Conflict(str(exc), code="not_pending") from exc
