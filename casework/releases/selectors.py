"""Reads for release pages, the API and the detective's tools."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404

from casework.cases.visibility import visible_q
from casework.people.roles import is_investigator
from casework.releases.models import Release, RiskReport


def release_list(user):
    """The releases of the cases this person may see (casework.cases.visibility)."""
    return Release.objects.filter(visible_q(user, "case__")).select_related("case").prefetch_related("reports")


def release_get_for_user(user, release_id: str) -> Release:
    """The release, if this person works cases (else 403) and may see its case: any other is
    a 404, as a release that does not exist."""
    if not is_investigator(user):
        raise PermissionDenied("Only investigators and release managers can see releases.")
    return get_object_or_404(release_list(user), release_id=release_id)


def release_latest_report(release: Release) -> RiskReport | None:
    return release.reports.select_related("run").order_by("-filed_at", "-id").first()


def release_summary(release_id: str) -> dict:
    """The seed's release summary; LookupError for an unknown release."""
    release = Release.objects.filter(release_id=release_id).first()
    if release is None:
        raise LookupError(f"No release {release_id!r}.")
    return release.summary()


def release_test_details(release_id: str) -> dict:
    release = Release.objects.filter(release_id=release_id).first()
    if release is None:
        raise LookupError(f"No release {release_id!r}.")
    return {"release_id": release_id, "tests": [t.as_dict() for t in release.test_details.all()]}


def release_tool_calls(release: Release, run_id: int | None = None) -> list:
    """The detective's tool calls of a run (the latest run when none is given), in order."""
    from agents.models import AgentCall, AgentRun

    if run_id is None:
        run = AgentRun.objects.filter(case=release.case, pipeline="releases").order_by("-created_at", "-id").first()
        run_id = run.pk if run else None
    if run_id is None:
        return []
    return list(AgentCall.objects.filter(run_id=run_id, kind=AgentCall.Kind.TOOL).order_by("id"))
