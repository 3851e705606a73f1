from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.people.roles import ADMIN, ROLES, STAFF_ROLES
from casework.people.signals import user_deactivated, user_deactivating


def roles_ensure() -> dict[str, Group]:
    return {name: Group.objects.get_or_create(name=name)[0] for name in ROLES}


@transaction.atomic
def user_create(*, actor, username: str, password: str, role: str, first_name: str = "",
                last_name: str = "", email: str = "") -> User:
    """Create a user in one role (idempotent on username: an existing user is returned)."""
    existing = User.objects.filter(username=username).first()
    if existing:
        return existing
    if role not in ROLES:
        raise ValidationError({"role": f"{role!r} is not one of {', '.join(ROLES)}."})
    # Only the group this person joins (not every role's: one query instead of four per user).
    group = Group.objects.get_or_create(name=role)[0]
    user = User(username=username, first_name=first_name, last_name=last_name, email=email,
                is_staff=role in STAFF_ROLES, is_superuser=role == ADMIN)
    user.set_password(password)
    user.full_clean()
    user.save()
    user.groups.add(group)
    audit_record(actor=actor, action="user.created", obj=user, data={"username": username, "role": role})
    return user


def roles_for_groups(groups) -> set[str]:
    """The Casework roles the provider's groups give, through settings.OIDC_GROUP_ROLES."""
    mapping = settings.OIDC_GROUP_ROLES
    return {mapping[g] for g in groups if isinstance(g, str) and g in mapping}


@transaction.atomic
def user_roles_set(*, actor, user: User, roles: set[str], source: str) -> bool:
    """Give `user` exactly these roles (admin also makes them staff and superuser, as
    user_create does); audited when anything changed. Returns whether it did."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"Unknown roles: {sorted(unknown)}")
    groups = roles_ensure()
    before = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    is_admin = ADMIN in roles
    is_staff = bool(set(roles) & STAFF_ROLES)
    changed = before != set(roles) or user.is_staff != is_staff or user.is_superuser != is_admin
    if not changed:
        return False
    user.groups.remove(*[groups[r] for r in before - set(roles)])
    user.groups.add(*[groups[r] for r in set(roles) - before])
    user.is_staff, user.is_superuser = is_staff, is_admin
    user.save(update_fields=["is_staff", "is_superuser"])
    user.__dict__.pop("_casework_roles", None)
    audit_record(actor=actor, action="user.roles_changed", obj=user,
                 data={"username": user.username, "from": sorted(before), "to": sorted(roles), "source": source})
    return True


@transaction.atomic
def user_deactivate(*, actor, user: User, reason: str = "") -> dict:
    """Take a person's access away in one step: the account is inactive, every session they
    have is ended and every API token of theirs revoked, and their open cases go back to the
    queue (unassigned), with a notification to the admins. One audit entry says all of it
    (each case's unassignment is audited on the case as well)."""
    from casework.security.models import ApiToken
    from casework.security.sessions import user_sessions_end

    user = User.objects.select_for_update().get(pk=user.pk)
    was_active = user.is_active
    user.is_active = False
    user.save(update_fields=["is_active"])
    now = timezone.now()
    tokens = list(ApiToken.objects.filter(user=user, revoked_at__isnull=True).values_list("prefix", flat=True))
    ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=now)
    returned = []
    for _receiver, references in user_deactivating.send(sender=User, user=user, actor=actor):
        returned += references or []
    summary = {"username": user.username, "was_active": was_active, "reason": reason[:500],
               "tokens_revoked": tokens, "cases_returned": returned}
    sessions = user_sessions_end(user)
    summary["sessions_ended"] = sessions
    audit_record(actor=actor, action="user.deactivated", obj=user, data=summary)
    user_deactivated.send(sender=User, user=user, actor=actor, cases_returned=returned)
    return summary


@transaction.atomic
def user_pseudonymise(*, actor, user: User, username: str, request_ref: str) -> User:
    """An erasure of the person as a data subject (casework.privacy.erasure): the account is
    deactivated as user_deactivate does (sessions, tokens, open cases back to the queue), then
    its username becomes `username` (a pseudonym), its names and e-mail address are emptied and
    its password made unusable. The row and its id stay: the audit trail and the decisions that
    name the account keep pointing at it. Audited (`user.pseudonymised`: the request and the
    new username, never the old values)."""
    user_deactivate(actor=actor, user=user, reason=f"erasure {request_ref}")
    user = User.objects.select_for_update().get(pk=user.pk)
    user.username, user.first_name, user.last_name, user.email = username, "", "", ""
    user.set_unusable_password()
    user.save(update_fields=["username", "first_name", "last_name", "email", "password"])
    audit_record(actor=actor, action="user.pseudonymised", obj=user, data={"username": username, "request": request_ref})
    return user


@transaction.atomic
def user_reactivate(*, actor, user: User) -> User:
    if not user.is_active:
        user.is_active = True
        user.save(update_fields=["is_active"])
        audit_record(actor=actor, action="user.reactivated", obj=user, data={"username": user.username})
    return user
