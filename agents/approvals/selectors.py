"""What approvals a person may see: those of the cases they may see (the one visibility rule,
casework.cases.visibility), nothing else; a pause of a case they may not see is a 404."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from agents.models import RunPause
from casework.cases.visibility import visible_q
from casework.people.models import Team


def approvals_visible_to(user, *, status: str = RunPause.Status.PENDING, case_type: str = "",
                         team: Team | None = None) -> QuerySet[RunPause]:
    """The approvals of the cases this person may see, newest first; filtered by status ("" for
    every status), case type and owning team (a team owns case types)."""
    pauses = (RunPause.objects.filter(kind=RunPause.Kind.APPROVAL, case__isnull=False)
              .filter(visible_q(user, prefix="case__"))
              .select_related("case", "case__assignee", "run"))
    if status:
        pauses = pauses.filter(status=status)
    if case_type:
        pauses = pauses.filter(case_type=case_type)
    if team is not None:
        pauses = pauses.filter(case_type__in=list(team.case_types or []))
    return pauses.order_by("-created_at", "-id")


def approval_get_for_user(user, pk: int) -> RunPause:
    """One approval, if its case is one this person may see; else Http404 (as for none)."""
    pause = approvals_visible_to(user, status="").filter(pk=pk).first()
    if pause is None:
        raise Http404("No such approval.")
    return pause


def approvals_for_case(case) -> QuerySet[RunPause]:
    """A case's approvals, pending first then the latest answered (the case page's panel);
    the caller has checked the case (case_get_for_user)."""
    return (RunPause.objects.filter(case=case, kind=RunPause.Kind.APPROVAL).select_related("run")
            .order_by("-created_at", "-id"))


def teams_for(user) -> list[Team]:
    """The teams a person may filter the inbox by: their own (every team for an admin)."""
    from casework.cases.visibility import sees_every_case

    teams = Team.objects.order_by("name")
    return list(teams if sees_every_case(user) else teams.filter(memberships__user=user).distinct())
