"""The last line (casework/cases/redaction.py): a hidden case's reference quoted in free text,
in a page or an API answer, is replaced before the response leaves."""

from __future__ import annotations

import pytest

from casework.cases.models import Case, CaseRestriction
from casework.cases.redaction import HIDDEN
from casework.cases.services import case_comment, case_create
from casework.entities.services import case_link
from casework.people.roles import ADMIN, INVESTIGATOR
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set


@pytest.fixture
def world(db):
    fraud = team_create(actor="system", name="Fraud", case_types=["fraud_alert"])
    support = team_create(actor="system", name="Support", case_types=["support_ticket"])
    people = {n: user_create(actor="system", username=n, password=f"{n}-pass-123", role=INVESTIGATOR)
              for n in ("fay", "sam", "hr")}
    people["root"] = user_create(actor="system", username="root", password="root-pass-123", role=ADMIN)
    team_member_set(actor="system", team=fraud, user=people["fay"])
    team_member_set(actor="system", team=support, user=people["sam"])
    root = people["root"]
    ticket = case_create(actor=root, case_type="support_ticket", title="Card stolen, says the customer")
    fraud_case = case_create(actor=root, case_type="fraud_alert", title="Card 4111 velocity")
    case_link(actor=root, from_case=ticket, to_case=fraud_case, kind="related", reason="same card")
    case_comment(actor=root, case=ticket, body=f"See {fraud_case.reference.lower()} and {ticket.reference}.")
    return people, ticket, fraud_case


def test_a_linked_hidden_case_is_not_named_on_the_page_the_api_or_the_timeline(world, client):
    people, ticket, fraud_case = world
    client.force_login(people["sam"])
    for url in (f"/cases/{ticket.reference}/", f"/cases/{ticket.reference}/timeline/",
                f"/api/cases/{ticket.reference}/"):
        body = client.get(url).content.decode()
        assert fraud_case.reference not in body.upper(), url
        assert ticket.reference in body, url
    assert HIDDEN in client.get(f"/cases/{ticket.reference}/").content.decode()
    # Those who may see it still read it.
    client.force_login(people["root"])
    assert fraud_case.reference in client.get(f"/cases/{ticket.reference}/").content.decode()


def test_someone_named_on_a_restricted_case_of_another_type_still_reads_its_reference(world, client):
    people, ticket, fraud_case = world
    Case.objects.filter(pk=fraud_case.pk).update(restricted=True)
    CaseRestriction.objects.create(case=fraud_case, user=people["sam"])
    client.force_login(people["sam"])
    assert fraud_case.reference in client.get(f"/cases/{ticket.reference}/").content.decode()
