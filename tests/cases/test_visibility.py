"""The one rule (casework/cases/visibility.py): who sees which case, as a filter and as an
object check, and the paths of the case core that use it."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from audit.models import AccessEntry, AppendOnlyError
from casework.cases.models import Case, CaseRestriction
from casework.cases.services import case_assign, case_create
from casework.cases.visibility import case_visible, cases_visible_to, people_who_may_see
from casework.people.models import TeamMembership
from casework.people.roles import ADMIN, INVESTIGATOR, MANAGER
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_remove, team_member_set, user_teams_sync


def person(name, role=INVESTIGATOR):
    return user_create(actor="system", username=name, password=f"{name}-pass-123", role=role)


@pytest.fixture
def org(db):
    fraud = team_create(actor="system", name="Fraud", case_types=["fraud_alert", "transaction_investigation"],
                        sso_groups=["fraud-analysts"], sso_lead_groups=["fraud-leads"])
    support = team_create(actor="system", name="Support", case_types=["support_ticket"], sso_groups=["helpdesk"])
    people = {name: person(name) for name in ("fay", "lena", "sam", "nobody", "both", "hr")}
    people["boss"] = person("boss", MANAGER)
    people["root"] = person("root", ADMIN)
    team_member_set(actor="system", team=fraud, user=people["fay"])
    team_member_set(actor="system", team=fraud, user=people["lena"], role="lead")
    team_member_set(actor="system", team=support, user=people["sam"])
    team_member_set(actor="system", team=fraud, user=people["both"])
    team_member_set(actor="system", team=support, user=people["both"])
    root = people["root"]
    cases = {
        "fraud": case_create(actor=root, case_type="fraud_alert", title="Card 4111"),
        "txn": case_create(actor=root, case_type="transaction_investigation", title="Mule ring"),
        "support": case_create(actor=root, case_type="support_ticket", title="Refund"),
        "access": case_create(actor=root, case_type="access_change", title="Joiner"),
        "restricted": case_create(actor=root, case_type="fraud_alert", title="An employee"),
    }
    Case.objects.filter(pk=cases["restricted"].pk).update(restricted=True)
    cases["restricted"].refresh_from_db()
    CaseRestriction.objects.create(case=cases["restricted"], user=people["hr"], granted_by=root)
    return people, cases


EXPECTED = {
    "fay": {"fraud", "txn"},
    "lena": {"fraud", "txn"},
    "sam": {"support"},
    "both": {"fraud", "txn", "support"},
    "nobody": set(),
    "boss": set(),
    "hr": {"restricted"},  # named on it, in no team
    "root": {"fraud", "txn", "support", "access", "restricted"},
}


def test_the_filter_and_the_object_check_give_the_same_answer_for_everyone(org):
    people, cases = org
    for name, who in people.items():
        listed = set(cases_visible_to(who).values_list("pk", flat=True))
        for key, case in cases.items():
            assert (case.pk in listed) == case_visible(who, case) == (key in EXPECTED[name]), (name, key)


def test_a_hidden_case_answers_404_not_403_and_its_reference_is_nowhere_on_the_queue(org, client):
    people, cases = org
    client.force_login(people["sam"])
    assert client.get(f"/cases/{cases['support'].reference}/").status_code == 200
    for key in ("fraud", "txn", "access", "restricted"):
        assert client.get(f"/cases/{cases[key].reference}/").status_code == 404, key
        assert client.get(f"/cases/{cases[key].reference}/timeline/").status_code == 404, key
    queue = client.get("/cases/").content.decode()
    assert cases["support"].reference in queue
    assert not [c.reference for k, c in cases.items() if k != "support" and c.reference in queue]
    api = client.get("/api/cases/").json()
    assert [row["reference"] for row in api["results"]] == [cases["support"].reference]


def test_a_deactivated_member_sees_nothing(org):
    people, cases = org
    fay = people["fay"]
    fay.is_active = False
    assert not cases_visible_to(fay).exists() and not case_visible(fay, cases["fraud"])


def test_assignment_stays_inside_the_teams_that_see_the_case(org):
    people, cases = org
    with pytest.raises(Exception, match="in no team that sees Fraud alert cases"):
        case_assign(actor=people["lena"], case=cases["fraud"], assignee=people["sam"])
    with pytest.raises(Exception, match="not among the people"):
        case_assign(actor=people["root"], case=cases["restricted"], assignee=people["fay"])
    assert case_assign(actor=people["lena"], case=cases["fraud"], assignee=people["fay"]).assignee == people["fay"]
    assert set(people_who_may_see(cases["support"]).values_list("username", flat=True)) == {"sam", "both", "root"}
    assert set(people_who_may_see(cases["restricted"]).values_list("username", flat=True)) == {"hr", "root"}


def test_leaving_a_team_takes_its_cases_away_at_the_next_request(org, client):
    people, cases = org
    client.force_login(people["fay"])
    url = f"/cases/{cases['fraud'].reference}/"
    assert client.get(url).status_code == 200
    team_member_remove(actor="system", team=TeamMembership.objects.get(user=people["fay"]).team, user=people["fay"])
    assert client.get(url).status_code == 404


def test_the_providers_groups_set_sso_memberships_and_leave_hand_made_ones(org):
    people, _cases = org
    fay, sam = people["fay"], people["sam"]  # fay: fraud by hand
    user_teams_sync(actor="oidc", user=fay, groups=["helpdesk"], source="oidc")
    user_teams_sync(actor="oidc", user=sam, groups=["fraud-leads"], source="oidc")

    def teams(user):
        return sorted(TeamMembership.objects.filter(user=user).values_list("team__name", "role", "source"))

    assert teams(fay) == [("Fraud", "member", "manual"), ("Support", "member", "sso")]
    assert teams(sam) == [("Fraud", "lead", "sso"), ("Support", "member", "manual")]
    user_teams_sync(actor="oidc", user=fay, groups=[], source="oidc")
    user_teams_sync(actor="oidc", user=sam, groups=["fraud-analysts"], source="oidc")
    assert teams(fay) == [("Fraud", "member", "manual")]
    assert teams(sam) == [("Fraud", "member", "sso"), ("Support", "member", "manual")]


def test_opening_a_case_is_on_record_and_its_timeline_poll_is_not(org, client):
    people, cases = org
    client.force_login(people["fay"])
    ref = cases["fraud"].reference
    client.get(f"/cases/{ref}/")
    client.get(f"/cases/{ref}/timeline/", HTTP_HX_REQUEST="true")
    client.get(f"/cases/{cases['support'].reference}/")  # 404: no read happened
    rows = list(AccessEntry.objects.values_list("username", "case_ref", "object_type", "via", "path"))
    assert rows == [("fay", ref, "case", "cases:detail", f"/cases/{ref}/")]


def test_access_entries_are_append_only_in_the_database_too(org, client):
    people, cases = org
    client.force_login(people["fay"])
    client.get(f"/cases/{cases['fraud'].reference}/")
    entry = AccessEntry.objects.get()
    with pytest.raises(AppendOnlyError):
        AccessEntry.objects.filter(pk=entry.pk).update(username="someone")
    for sql in ("UPDATE audit_accessentry SET username = 'someone'", "DELETE FROM audit_accessentry"):
        with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
    assert AccessEntry.objects.get().username == "fay"

