from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction

from audit.services import audit_record
from casework.people.roles import ADMIN, ROLES


def roles_ensure() -> dict[str, Group]:
    return {name: Group.objects.get_or_create(name=name)[0] for name in ROLES}


@transaction.atomic
def user_create(*, actor, username: str, password: str, role: str, first_name: str = "",
                last_name: str = "", email: str = "") -> User:
    """Create a user in one role (idempotent on username: an existing user is returned)."""
    groups = roles_ensure()
    existing = User.objects.filter(username=username).first()
    if existing:
        return existing
    user = User(username=username, first_name=first_name, last_name=last_name, email=email,
                is_staff=role == ADMIN, is_superuser=role == ADMIN)
    user.set_password(password)
    user.full_clean()
    user.save()
    user.groups.add(groups[role])
    audit_record(actor=actor, action="user.created", obj=user, data={"username": username, "role": role})
    return user
