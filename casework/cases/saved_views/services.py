"""Saving, renaming, sharing and deleting queue views; each change audited."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.http import QueryDict

from audit.services import audit_record
from casework.cases.saved_views.models import SavedView
from casework.people.models import Team, TeamMembership

# The queue's filter parameters a view keeps (not the page number).
FILTER_PARAMS = ("q", "case_type", "status", "priority", "assignee", "sla", "ordering")


def saved_view_normalise_query(query: str | QueryDict) -> str:
    """Keep the queue's filters, drop empty values and anything else; refuse a bad value,
    naming the parameter (ValidationError on `query`)."""
    from casework.cases.filters import CaseFilter

    params = query if isinstance(query, QueryDict) else QueryDict(query.lstrip("?"))
    kept = [(k, params.get(k)) for k in FILTER_PARAMS if params.get(k)]
    filterset = CaseFilter(QueryDict(urlencode(kept)), queryset=None)
    if kept and not filterset.form.is_valid():
        raise ValidationError({"query": "; ".join(filterset.error_messages())})
    return urlencode(kept)


def _sharing(*, team: Team | None, everyone: bool, owner) -> None:
    if team is not None and not everyone and not TeamMembership.objects.filter(team=team, user=owner).exists():
        raise ValidationError({"team": f"You are not in {team.name}; share with a team you belong to."})


def _save(view: SavedView) -> SavedView:
    view.name = (view.name or "").strip()
    view.full_clean(validate_constraints=False, exclude=["owner"])
    try:
        with transaction.atomic():
            view.save()
    except IntegrityError as exc:
        raise ValidationError({"name": f"You already have a view named “{view.name}”."}) from exc
    return view


def _snapshot(view: SavedView) -> dict:
    return {"name": view.name, "query": view.query, "team": view.team.name if view.team_id else None,
            "everyone": view.everyone, "pinned": view.pinned}


@transaction.atomic
def saved_view_create(*, actor, name: str, query: str | QueryDict, team: Team | None = None,
                      everyone: bool = False, pinned: bool = False) -> SavedView:
    _sharing(team=team, everyone=everyone, owner=actor)
    view = _save(SavedView(owner=actor, name=name, query=saved_view_normalise_query(query), team=team,
                           everyone=everyone, pinned=pinned))
    audit_record(actor=actor, action="saved_view.created", obj=view, data=_snapshot(view))
    return view


@transaction.atomic
def saved_view_update(*, actor, view: SavedView, **changes) -> SavedView:
    """Rename, re-share, pin / unpin or change the filters of one's own view."""
    before = _snapshot(view)
    for key, value in changes.items():
        if key == "query":
            value = saved_view_normalise_query(value)
        if key not in {"name", "query", "team", "everyone", "pinned"}:
            raise ValidationError({key: "This cannot be changed."})
        setattr(view, key, value)
    _sharing(team=view.team, everyone=view.everyone, owner=actor)
    view = _save(view)
    after = _snapshot(view)
    if after != before:
        audit_record(actor=actor, action="saved_view.updated", obj=view,
                     data={k: {"from": before[k], "to": after[k]} for k in after if after[k] != before[k]})
    return view


@transaction.atomic
def saved_view_delete(*, actor, view: SavedView) -> None:
    audit_record(actor=actor, action="saved_view.deleted", obj=view, data=_snapshot(view))
    view.delete()
