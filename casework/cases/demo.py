"""Demo data: people for each role, and cases for every case type.

A case-type package that has its own realistic demo data registers a loader here (from its
AppConfig.ready); types without one get a handful of plain cases so the queue shows them.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from casework.cases.models import Case
from casework.cases.types import CASE_TYPES
from casework.people.roles import ADMIN, INVESTIGATOR, MANAGER
from casework.people.services import user_create

# username, role, first name, last name, password (demo data only)
DEMO_USERS = [
    ("alice", INVESTIGATOR, "Alice", "Adeyemi", "alice-investigates"),
    ("ivan", INVESTIGATOR, "Ivan", "Ilić", "ivan-investigates"),
    ("mona", MANAGER, "Mona", "Marsh", "mona-manages"),
    ("mark", MANAGER, "Mark", "Mensah", "mark-manages"),
    ("admin", ADMIN, "Ada", "Admin", "admin-administers"),
]

DEMO_LOADERS: dict[str, Callable[..., int]] = {}

_PLAIN_CASES = {
    "access_change": [
        ("Write access to Payroll granted to j.devries", "high"),
        ("Admin rights on CRM for a temporary contractor", "critical"),
        ("Read access to Data Warehouse for an analyst", "low"),
    ],
    "release_risk": [
        ("Release v2.1.0: payment processing", "high"),
        ("Release v2.0.3: authentication fix", "medium"),
        ("Release v1.9.8: copy changes", "low"),
    ],
    "fraud_alert": [
        ("Deposit-withdraw cycling on a new account", "critical"),
        ("Shared device across five accounts", "high"),
        ("Face match below threshold at onboarding", "medium"),
    ],
}


def demo_register(case_type: str, loader: Callable[..., int]) -> None:
    DEMO_LOADERS[case_type] = loader


def demo_load(*, stdout=None) -> dict:
    """Create demo users and cases; running it again adds nothing."""
    users = {}
    for username, role, first, last, password in DEMO_USERS:
        users[username] = user_create(actor="system", username=username, password=password, role=role,
                                      first_name=first, last_name=last, email=f"{username}@example.com")
    created = 0
    for key in CASE_TYPES:
        if key in DEMO_LOADERS:
            created += DEMO_LOADERS[key](users=users)
        elif not Case.objects.filter(case_type=key).exists():
            created += _plain_cases(key, users)
    return {"users": DEMO_USERS, "cases_created": created}


def _plain_cases(case_type: str, users) -> int:
    from casework.cases.services import case_assign, case_comment, case_create

    rng = random.Random(case_type)
    count = 0
    for title, priority in _PLAIN_CASES.get(case_type, []):
        case = case_create(actor="system", case_type=case_type, title=title, priority=priority,
                           description="Demo case: this case type's own pipeline fills in the details.")
        if rng.random() < 0.5:
            case = case_assign(actor=users["alice"], case=case, assignee=users["alice"])
            case_comment(actor=users["alice"], case=case, body="Looking into this now.")
        count += 1
    return count
