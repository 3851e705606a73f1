"""Roles are Django groups. One place answers "may this user do X"."""

from __future__ import annotations

from functools import wraps

from django.core.exceptions import PermissionDenied

INVESTIGATOR = "investigator"
MANAGER = "manager"
ADMIN = "admin"
# Works cases as investigators do (the queue, case pages, comments, "Ask the agent") and alone,
# with admins, decides releases (go / no_go / deferred); investigators read and comment on them.
RELEASE_MANAGER = "release_manager"
# The data-protection officer: exports what is held about a data subject (subject access) and
# places or lifts legal holds, across every team, with a reason on record (casework/privacy).
DATA_PROTECTION = "data_protection"
ROLES = (INVESTIGATOR, MANAGER, ADMIN, RELEASE_MANAGER, DATA_PROTECTION)
# Roles that open the admin site (staff). Admins see every model; a data-protection officer
# only what the privacy admin opens to the role (legal holds, erasure requests, subject access).
STAFF_ROLES = frozenset({ADMIN, DATA_PROTECTION})


def user_roles(user) -> set[str]:
    if not getattr(user, "is_authenticated", False):
        return set()
    cached = getattr(user, "_casework_roles", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        if user.is_superuser:
            cached.add(ADMIN)
        user._casework_roles = cached
    return cached


def is_investigator(user) -> bool:
    """Investigators (and release managers, and admins) see and act on cases."""
    return bool(user_roles(user) & {INVESTIGATOR, RELEASE_MANAGER, ADMIN})


def has_role(user, role: str) -> bool:
    """The user holds this role, or is an admin (who holds every role's rights)."""
    return bool(user_roles(user) & {role, ADMIN})


def is_data_protection(user) -> bool:
    """Admins and data-protection officers: they see what is held about any subject, every team's
    (subject access), so the exporter's need-to-know is the role itself."""
    return has_role(user, DATA_PROTECTION)


def is_manager(user) -> bool:
    return MANAGER in user_roles(user)


def investigators(request=None):
    """The people a case may be assigned to (investigators and admins), by username.
    django-filter calls a queryset callable with the request. Here, not with the queue's
    filters: the navigation reads it too, and the filters read the navigation."""
    from django.contrib.auth.models import User

    return User.objects.filter(groups__name__in=[INVESTIGATOR, ADMIN]).distinct().order_by("username")


def investigator_required(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not is_investigator(request.user):
            raise PermissionDenied("Only investigators can see cases.")
        return view(request, *args, **kwargs)

    return wrapper
