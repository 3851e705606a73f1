"""The world the need-to-know matrix runs in: four teams, the people of the matrix, one case of
each type and one restricted case, every one made through the services.

Teams: fraud (fraud alerts and transaction investigations), support, IAM (access changes),
releases. People: a member of each team, the fraud team's lead, an investigator in no team,
a manager, an admin, and `staff` (an investigator of the support team with every view
permission of the Django admin, not a superuser). The restricted case is a fraud alert shown
only to the support member (and admins)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.contrib.auth.models import Permission, User

from casework.cases.models import Case, CaseRestriction
from casework.people.roles import ADMIN, INVESTIGATOR, MANAGER, RELEASE_MANAGER
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set

TEAMS = {"fraud": ["fraud_alert", "transaction_investigation"], "support": ["support_ticket"],
         "iam": ["access_change"], "releases": ["release_risk"]}
# person: (role, team, team role)
PEOPLE = {
    "fraud_member": (INVESTIGATOR, "fraud", "member"),
    "fraud_lead": (INVESTIGATOR, "fraud", "lead"),
    "support_member": (INVESTIGATOR, "support", "member"),
    "iam_member": (INVESTIGATOR, "iam", "member"),
    "releases_member": (RELEASE_MANAGER, "releases", "member"),
    "nobody": (INVESTIGATOR, None, None),
    "manager": (MANAGER, None, None),
    "admin": (ADMIN, None, None),
}
RESTRICTED_TO = "support_member"


@dataclass
class World:
    people: dict[str, User]
    staff: User
    cases: dict[str, Case]  # "fraud", "restricted", "support", "access", "txn", "release"
    ids: dict[str, dict[str, str]] = field(default_factory=dict)  # case key -> URL values (ticket_id ...)

    def tokens(self, key: str) -> list[str]:
        """What names this case on a page: its reference, and its ticket or release id."""
        values = self.ids[key]
        return [self.cases[key].reference, *(v for k, v in values.items() if k in ("ticket_id", "release_id"))]

    def hidden_from(self, user) -> list[str]:
        from casework.cases.visibility import case_visible

        return [key for key, case in self.cases.items() if not case_visible(user, case)]

    def leaked(self, text: str, user) -> list[str]:
        return [token for key in self.hidden_from(user) for token in self.tokens(key)
                if re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text, re.IGNORECASE)]


def world_make(asked) -> World:
    """`asked`: the access case of tests/access/conftest.py (an employee asked to explain)."""
    from casework.fraud.services import alert_create
    from casework.releases.services import release_submit
    from casework.support.models import Customer
    from casework.support.services import customer_save, ticket_open, ticket_triage_failed
    from casework.transactions.demo_data import planted
    from casework.transactions.ingest import transactions_import
    from casework.transactions.services import investigation_start
    from tests.fraud.conftest import alert_data
    from tests.releases.conftest import SEED, release

    teams = {name: team_create(actor="system", name=f"Matrix {name}", case_types=types) for name, types in TEAMS.items()}
    people = {}
    for name, (role, team, team_role) in PEOPLE.items():
        people[name] = user_create(actor="system", username=f"m_{name}", password="matrix-pass-123", role=role)
        if team:
            team_member_set(actor="system", team=teams[team], user=people[name], role=team_role)
    staff = user_create(actor="system", username="m_staff", password="matrix-pass-123", role=INVESTIGATOR)
    staff.is_staff = True
    staff.save()
    staff.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    team_member_set(actor="system", team=teams["support"], user=staff)

    fraud = alert_create(actor="system", data=alert_data(account_id="ACC-7001")).case
    restricted = alert_create(actor="system", data=alert_data(account_id="ACC-7002")).case
    Case.objects.filter(pk=restricted.pk).update(restricted=True)
    CaseRestriction.objects.create(case=restricted, user=people[RESTRICTED_TO], granted_by=people["admin"])
    customer = customer_save(actor="system", data={"customer_id": "CUST-901", "name": "Mia Matrix", "plan": "pro",
                                                   "tenure_months": 3, "seats": 2, "region": "eu-west"})
    ticket = ticket_open(actor="system", customer=Customer.objects.get(pk=customer.pk),
                         message="I was charged twice for the March invoice.")
    # Triage failed: the ticket waits for a person, so the support queue lists it.
    ticket = ticket_triage_failed(actor="system", ticket=ticket, run=None, error="The matrix runs no agents.")
    rows = [{**row, "home_country": "NL"} for row in planted("card_testing", "CARD-7301", [])]
    transactions_import(actor="system", rows=rows, via="test")
    txn = investigation_start(actor="system", transaction_id=rows[-1]["transaction_id"]).case
    made = release_submit(actor="system", data=release(SEED, release_id="rel-matrix-1"))
    cases = {key: Case.objects.get(pk=case.pk) for key, case in (
        ("fraud", fraud), ("restricted", restricted), ("support", ticket.case), ("access", asked.mutation.case),
        ("txn", txn), ("release", made.case))}
    world = World(people=people, staff=staff, cases=cases)
    world.ids = {key: {"reference": case.reference} for key, case in cases.items()}
    world.ids["support"]["ticket_id"] = ticket.ticket_id
    world.ids["release"]["release_id"] = made.release_id
    world.ids["access"]["request_pk"] = str(asked.pk)
    _sub_objects(world)
    return world


def _sub_objects(world: World) -> None:
    """A task and the latest agent run of every case: URLs naming one of them (tasks/<pk>/done,
    runs/<run_id>/trace) are tried with the hidden case's own, so that only the case check
    can refuse them."""
    from agents.models import AgentRun, RunPause
    from casework.cases.tasks.services import task_create

    for key, case in world.cases.items():
        task = task_create(actor=world.people["admin"], case=case, title="Check the matrix")
        world.ids[key]["task_pk"] = str(task.pk)
        run = AgentRun.objects.filter(case=case).order_by("-id").first()
        world.ids[key]["run_id"] = str(run.pk) if run else "999999"
        # An approval waiting on every case: /approvals/ and /api/approvals/ must list only the
        # visible cases' ones, and a decision on a hidden case's answers as for none.
        waiting = AgentRun.objects.create(case=case, pipeline="matrix", mode="matrix",
                                          status=AgentRun.Status.WAITING_APPROVAL)
        pause = RunPause.objects.create(run=waiting, case=case, case_type=case.case_type, call_key="matrix",
                                        agent="matrix_agent", tool="send_notification",
                                        arguments={"about": case.reference}, reason=f"About {case.reference}.")
        world.ids[key]["approval_pk"] = str(pause.pk)
