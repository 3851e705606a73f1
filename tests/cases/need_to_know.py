"""People for the need-to-know tests: each in a team owning the given case types (or in none),
made through the services (user_create, team_create, team_member_set)."""

from __future__ import annotations

from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set

FRAUD = "fraud_alert"
SUPPORT = "support_ticket"


def team_of(*case_types: str):
    return team_create(actor="system", name=f"Team {'+'.join(case_types)}", case_types=list(case_types))


def person(username: str, *case_types: str, role: str = INVESTIGATOR, lead: bool = False):
    """A person in `role`, in the team owning `case_types` (none given: in no team)."""
    user = user_create(actor="system", username=username, password=f"{username}-pass-123", role=role,
                       email=f"{username}@example.org")
    if case_types:
        team_member_set(actor="system", team=team_of(*case_types), user=user, role="lead" if lead else "member")
    return user
