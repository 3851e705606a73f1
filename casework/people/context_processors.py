from __future__ import annotations

from casework.people.roles import RELEASE_MANAGER, has_role, is_investigator, is_manager


def roles(request) -> dict:
    user = getattr(request, "user", None)
    return {
        "is_investigator": is_investigator(user) if user else False,
        "is_manager": is_manager(user) if user else False,
        "is_release_manager": has_role(user, RELEASE_MANAGER) if user else False,
    }
