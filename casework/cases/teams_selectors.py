"""What the teams pages show: every team with its people, and for one person what they may see
and why (their roles, their teams and where each membership comes from, the restricted cases
they are named on). The rule itself is casework/cases/visibility.py; this only explains it."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import User

from casework.cases.models import CaseRestriction
from casework.cases.types import CASE_TYPES
from casework.cases.visibility import sees_every_case
from casework.people.models import ExternalAccount, Team, TeamMembership
from casework.people.roles import DATA_PROTECTION, is_investigator, user_roles

# The restricted cases a person's page lists (newest grant first); a count says how many more.
RESTRICTED_SHOWN = 50


def type_labels(keys) -> list[str]:
    return [CASE_TYPES[k].label if k in CASE_TYPES else k for k in keys]


def teams_with_members() -> list[Team]:
    """Every team, its memberships (person, role, source) in `.rows`, its types' labels in `.labels`."""
    teams = list(Team.objects.prefetch_related("memberships__user"))
    for team in teams:
        team.labels = type_labels(team.case_types or ())
        team.rows = sorted(team.memberships.all(), key=lambda m: (m.role != "lead", m.user.username))
    return teams


@dataclass
class TeamAccess:
    team: Team
    role: str
    source: str
    # The person's provider groups that put them in this team (SSO memberships).
    groups: list[str]
    labels: list[str]


@dataclass
class PersonAccess:
    user: User
    roles: list[str]
    admin: bool
    works_cases: bool
    teams: list[TeamAccess] = field(default_factory=list)
    restricted: list[CaseRestriction] = field(default_factory=list)
    restricted_count: int = 0

    @property
    def case_type_labels(self) -> list[str]:
        seen: dict[str, None] = {}
        for team in self.teams:
            seen.update(dict.fromkeys(team.labels))
        return list(seen)


def person_access(user: User) -> PersonAccess:
    account = ExternalAccount.objects.filter(user=user).first()
    groups = set(account.groups if account else ())
    access = PersonAccess(user=user, roles=sorted(user_roles(user)), admin=sees_every_case(user),
                          works_cases=is_investigator(user))
    for m in TeamMembership.objects.filter(user=user).select_related("team").order_by("team__name"):
        team = m.team
        gave = sorted(groups & set((team.sso_lead_groups or []) + (team.sso_groups or []))) if m.source == "sso" else []
        access.teams.append(TeamAccess(team=team, role=m.role, source=m.source, groups=gave,
                                       labels=type_labels(team.case_types or ())))
    named = CaseRestriction.objects.filter(user=user).select_related("case").order_by("-granted_at", "-id")
    access.restricted = list(named[:RESTRICTED_SHOWN])
    access.restricted_count = named.count() if len(access.restricted) == RESTRICTED_SHOWN else len(access.restricted)
    return access


def person_access_line(user: User) -> str:
    """One line: what this person sees, and why (the demo's start-up message)."""
    access = person_access(user)
    if access.admin:
        return "every case (admin)"
    teams = "; ".join(f"{t.team.name} ({t.role}): {', '.join(t.labels)}" for t in access.teams)
    if DATA_PROTECTION in access.roles:
        return ("opens no case pages; in the admin: legal holds, erasure requests and subject access for any "
                "data subject (data protection)")
    if not access.works_cases:
        where = f"in {teams}, " if teams else ""
        return f"{where}opens no case pages (answers only the requests addressed to them)"
    line = teams or "no team: no cases"
    if access.restricted_count:
        line += f"; named on {access.restricted_count} restricted case(s)"
    return line
