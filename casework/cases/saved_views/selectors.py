"""Which saved views a person sees: their own, their teams' (casework.people.models.Team), and
those shared with everyone. What a view lists is the viewer's own cases (the queue's rule)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404

from casework.cases.saved_views.models import SavedView


def saved_views_visible(user) -> QuerySet[SavedView]:
    if not user.is_authenticated:
        return SavedView.objects.none()
    return (SavedView.objects.filter(Q(owner=user) | Q(everyone=True) | Q(team__memberships__user=user))
            .select_related("owner", "team").distinct())


def saved_views_pinned(user) -> list[SavedView]:
    return list(saved_views_visible(user).filter(pinned=True)[:8])


def saved_views_pinned_nav(user) -> list[tuple[int, str]]:
    """What the navigation keeps of them (casework/cases/navigation.py caches it)."""
    return [(v.pk, v.name) for v in saved_views_pinned(user)]


def saved_view_get_for_user(user, pk: int, *, own: bool = False) -> SavedView:
    """A view this person can see (404 otherwise); `own`: one they may change (403 otherwise)."""
    view = get_object_or_404(saved_views_visible(user), pk=pk)
    if own and view.owner_id != user.pk:
        raise PermissionDenied("Only the person who saved a view can change it.")
    return view
