"""Teams: who works which case types (casework.people.models.Team). Created and edited in the
admin or here; members come from the identity provider's groups (OIDC's groups claim at each
sign-in and renewal, SCIM group changes) or are added by hand. Every change is audited."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from audit.services import audit_record
from casework.case_type_source import case_types_known
from casework.people.models import Team, TeamMembership

ROLES = (TeamMembership.Role.MEMBER, TeamMembership.Role.LEAD)


def _forget(user) -> None:
    """What this user object remembered of its teams (visibility, navigation) is read again."""
    user.__dict__.pop("_casework_teams", None)
    user.__dict__.pop("_casework_nav", None)


def _case_types_check(case_types) -> None:
    known = case_types_known()
    unknown = sorted(set(case_types) - set(known))
    if unknown:
        raise ValidationError({"case_types": f"{', '.join(unknown)}: no such case type (one of {', '.join(known)})."})


def _groups(groups) -> list[str]:
    return sorted({str(g).strip() for g in groups if str(g).strip()})


@transaction.atomic
def team_create(*, actor, name: str, case_types, slug: str = "", sso_groups=(), sso_lead_groups=()) -> Team:
    """A team owning these case types (idempotent on the name: the existing team is returned)."""
    existing = Team.objects.filter(name=name).first()
    if existing:
        return existing
    _case_types_check(case_types)
    team = Team.objects.create(name=name, slug=slug or slugify(name)[:50], case_types=list(case_types),
                               sso_groups=list(sso_groups), sso_lead_groups=list(sso_lead_groups))
    audit_record(actor=actor, action="team.created", obj=team,
                 data={"team": name, "case_types": list(case_types), "sso_groups": list(sso_groups),
                       "sso_lead_groups": list(sso_lead_groups)})
    return team


@transaction.atomic
def team_update(*, actor, team: Team, name: str, case_types, slug: str = "", sso_groups=(),
                sso_lead_groups=()) -> Team:
    """Rename a team, or change the case types it owns or the groups that fill it; audited with
    what changed. Members from the groups follow the new groups at their next sign-in or SCIM
    change."""
    _case_types_check(case_types)
    wanted = {"name": name, "slug": slug or team.slug, "case_types": list(dict.fromkeys(case_types)),
              "sso_groups": _groups(sso_groups), "sso_lead_groups": _groups(sso_lead_groups)}
    changed = {field: {"from": getattr(team, field), "to": value} for field, value in wanted.items()
               if getattr(team, field) != value}
    if not changed:
        return team
    for field, value in wanted.items():
        setattr(team, field, value)
    team.full_clean()
    team.save()
    audit_record(actor=actor, action="team.changed", obj=team, data={"team": team.name, "changed": changed})
    return team


@transaction.atomic
def team_delete(*, actor, team: Team) -> None:
    """The team goes, and with it its memberships: its people no longer see its case types."""
    members = list(team.memberships.values_list("user__username", flat=True))
    data = {"team": team.name, "case_types": team.case_types, "members": members}
    audit_record(actor=actor, action="team.deleted", obj=team, data=data)
    team.delete()


@transaction.atomic
def team_member_set(*, actor, team: Team, user: User, role: str = TeamMembership.Role.MEMBER,
                    source: str = TeamMembership.Source.MANUAL) -> TeamMembership:
    """`user` is in `team` with this role (added, or their role changed); audited when it changed."""
    if role not in ROLES:
        raise ValidationError({"role": f"{role!r} is not one of {', '.join(ROLES)}."})
    membership, created = TeamMembership.objects.get_or_create(team=team, user=user,
                                                               defaults={"role": role, "source": source})
    if not created and (membership.role, membership.source) == (role, source):
        return membership
    before = None if created else membership.role
    membership.role, membership.source = role, source
    membership.save(update_fields=["role", "source"])
    _forget(user)
    audit_record(actor=actor, action="team.member_set", obj=team,
                 data={"team": team.name, "username": user.username, "from": before, "to": role, "source": source})
    return membership


@transaction.atomic
def team_member_remove(*, actor, team: Team, user: User) -> bool:
    deleted, _ = TeamMembership.objects.filter(team=team, user=user).delete()
    _forget(user)
    if deleted:
        audit_record(actor=actor, action="team.member_removed", obj=team,
                     data={"team": team.name, "username": user.username})
    return bool(deleted)


def teams_for_groups(groups) -> dict[Team, str]:
    """The teams (and role in each) the provider's groups give: a lead group wins over a member one."""
    names = {g for g in groups if isinstance(g, str)}
    found: dict[Team, str] = {}
    for team in Team.objects.all():
        if names & set(team.sso_lead_groups or ()):
            found[team] = TeamMembership.Role.LEAD
        elif names & set(team.sso_groups or ()):
            found[team] = TeamMembership.Role.MEMBER
    return found


@transaction.atomic
def user_teams_sync(*, actor, user: User, groups, source: str) -> None:
    """Make this person's memberships from the provider's groups (`source` "oidc" or "scim" says
    which path saw them) what their groups now say: joined, role changed, or left. A membership
    added by hand belongs to whoever added it: the groups neither change nor remove it."""
    wanted = teams_for_groups(groups)
    current = {m.team_id: m for m in TeamMembership.objects.filter(user=user).select_related("team")}
    for team, role in wanted.items():
        had = current.get(team.pk)
        if had is None or (had.source == TeamMembership.Source.SSO and had.role != role):
            team_member_set(actor=actor, team=team, user=user, role=role, source=TeamMembership.Source.SSO)
    wanted_ids = {t.pk for t in wanted}
    for team_id, membership in current.items():
        if team_id not in wanted_ids and membership.source == TeamMembership.Source.SSO:
            team_member_remove(actor=actor, team=membership.team, user=user)
    _forget(user)
