"""Demo data: people for each role, and cases for every case type whose pipeline exists.

A case-type package registers a loader here (from its AppConfig.ready) that makes its cases
the way real ones arrive, run by its pipeline. A type whose pipeline is not registered
(still being built) gets no cases: no placeholder cases that no agent can work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from casework.cases.types import case_types_available
from casework.people.roles import ADMIN, DATA_PROTECTION, INVESTIGATOR, MANAGER, RELEASE_MANAGER
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set

# username, role, first name, last name, password (demo data only)
DEMO_USERS = [
    ("alice", INVESTIGATOR, "Alice", "Adeyemi", "alice-investigates"),
    ("ivan", INVESTIGATOR, "Ivan", "Ilić", "ivan-investigates"),
    ("mona", MANAGER, "Mona", "Marsh", "mona-manages"),
    ("mark", MANAGER, "Mark", "Mensah", "mark-manages"),
    ("admin", ADMIN, "Ada", "Admin", "admin-administers"),
    ("rita", RELEASE_MANAGER, "Rita", "Rahman", "rita-releases"),
    ("leo", INVESTIGATOR, "Leo", "Lindqvist", "leo-leads"),
    ("irene", INVESTIGATOR, "Irene", "Ito", "irene-investigates"),
    ("dora", DATA_PROTECTION, "Dora", "Dahl", "dora-protects"),
]

# Teams: name, the case types it owns, its people and their roles. A person sees the cases of
# their teams only (casework/cases/visibility.py); admins see every case. Mona validates access
# changes, so she is in IAM (as a manager she answers requests; she opens no case pages).
DEMO_TEAMS = [
    ("Fraud and transactions", ["fraud_alert", "transaction_investigation"], [("leo", "lead"), ("alice", "member")]),
    ("Support desk", ["support_ticket"], [("ivan", "lead")]),
    ("IAM", ["access_change"], [("irene", "lead"), ("mona", "member")]),
    ("Releases", ["release_risk"], [("rita", "lead")]),
]

DEMO_LOADERS: dict[str, Callable[..., int]] = {}


def demo_register(case_type: str, loader: Callable[..., int]) -> None:
    DEMO_LOADERS[case_type] = loader


# What shared parts of the case page add to the demo cases once they exist (tasks, evidence):
# called with the demo users after every case type's loader; each must add nothing twice.
DEMO_AFTER: list[Callable[..., None]] = []


def demo_register_after(extra: Callable[..., None]) -> None:
    if extra not in DEMO_AFTER:
        DEMO_AFTER.append(extra)


# What runs last, and only when this load created cases (a second run adds nothing): the
# workbench's history, deadlines past and near, notifications (issue 14:
# casework/cases/dashboard/demo.py, registered by the notifications app's ready).
DEMO_LAST: list[Callable[..., Any]] = []


def demo_register_last(extra: Callable[..., Any]) -> None:
    if extra not in DEMO_LAST:
        DEMO_LAST.append(extra)


def demo_people() -> dict:
    """The demo's people and their teams (idempotent): {username: user}."""
    users = {}
    for username, role, first, last, password in DEMO_USERS:
        users[username] = user_create(actor="system", username=username, password=password, role=role,
                                      first_name=first, last_name=last, email=f"{username}@example.com")
    for name, case_types, members in DEMO_TEAMS:
        team = team_create(actor="system", name=name, case_types=case_types)
        for username, role in members:
            team_member_set(actor="system", team=team, user=users[username], role=role)
    return users


def demo_load(*, stdout=None) -> dict:
    """Create demo users, their teams and cases; running it again adds nothing."""
    # The teams before the cases: a case is assigned only to someone whose team sees it.
    users = demo_people()
    created = 0
    for case_type in case_types_available():
        if case_type.key in DEMO_LOADERS:
            created += DEMO_LOADERS[case_type.key](users=users)
    for extra in DEMO_AFTER:
        extra(users=users)
    if created:
        for extra in DEMO_LAST:
            extra(users=users)
    return {"users": DEMO_USERS, "cases_created": created, "people": users}
