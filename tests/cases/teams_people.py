"""People and teams of their own for the need-to-know tests of this package: leo leads and fay
works the fraud team (fraud alerts and transactions), sam works support; root is an admin."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User

from casework.cases.models import Case
from casework.cases.services import case_create
from casework.people.models import Team
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set


@dataclass
class Teams:
    fraud: Team
    support: Team
    leo: User
    fay: User
    sam: User
    fraud_case: Case
    support_case: Case


def teams_made() -> Teams:
    people = {name: user_create(actor="system", username=name, password=f"{name}-pass-123", role=INVESTIGATOR)
              for name in ("leo", "fay", "sam")}
    fraud = team_create(actor="system", name="Fraud and transactions",
                        case_types=["fraud_alert", "transaction_investigation"], sso_groups=["fraud-analysts"],
                        sso_lead_groups=["fraud-leads"])
    support = team_create(actor="system", name="Support desk", case_types=["support_ticket"])
    team_member_set(actor="system", team=fraud, user=people["leo"], role="lead")
    team_member_set(actor="system", team=fraud, user=people["fay"])
    team_member_set(actor="system", team=support, user=people["sam"])
    return Teams(fraud=fraud, support=support, **people,
                 fraud_case=case_create(actor="system", case_type="fraud_alert", title="Card testing"),
                 support_case=case_create(actor="system", case_type="support_ticket", title="Cannot log in"))
