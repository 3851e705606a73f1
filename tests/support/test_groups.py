"""Escalation groups (issue 25.4): an escalated ticket lands in its group's queue, is assigned
within the group (round-robin or least-loaded, SUPPORT_GROUP_ASSIGNMENT) through case_assign,
and the group's members are notified."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from audit.models import AuditEntry
from casework.cases.notifications.models import Notification
from casework.people.roles import INVESTIGATOR, MANAGER
from casework.people.teams import team_member_remove
from casework.support.groups import group_pick_member, support_group_save
from casework.support.models import SupportGroup
from tests.cases.need_to_know import FRAUD, SUPPORT, person, team_of
from tests.support.conftest import send

pytestmark = pytest.mark.django_db(transaction=True)

SECURITY = "Someone hacked my account and changed my password!"


def _people(*names, role=INVESTIGATOR):
    """People in the support team (group members must see support tickets)."""
    return [person(n, SUPPORT, role=role) for n in names]


@pytest.fixture
def groups(db, support_data):
    """The four groups (as migration 0005 creates them; a transactional test's flush removes
    migration data); security and billing get members."""
    for key in ("billing", "technical", "general", "security"):
        support_group_save(actor="system", key=key)
    sam, sue, sid = _people("sam", "sue", "sid")
    bea, = _people("bea")
    mona, = _people("mona", role=MANAGER)  # not an investigator: never given a ticket
    support_group_save(actor="system", key="security", members=[sue, sam, sid, mona])
    support_group_save(actor="system", key="billing", members=[bea])
    return {"sam": sam, "sue": sue, "sid": sid, "bea": bea, "mona": mona}


def test_an_escalated_security_ticket_goes_to_the_security_group_and_its_members_are_told(alice, groups):
    _, ticket = send(alice, "CUST-003", SECURITY)
    ticket.refresh_from_db()
    ticket.case.refresh_from_db()
    assert ticket.lifecycle == "escalated" and ticket.group.key == "security"
    # Round-robin starts at the first member by username; the manager is not eligible.
    assert ticket.case.assignee.username == "sam"
    assigned = AuditEntry.objects.get(action="case.assigned", case_id=ticket.case_id)
    assert assigned.actor == "system" and assigned.data["to"] == "sam"
    told = Notification.objects.filter(kind="group_queue", case=ticket.case)
    assert sorted(told.values_list("recipient_user__username", flat=True)) == ["sam", "sid", "sue"]
    entry = AuditEntry.objects.get(action="support.escalated_to_group", case_id=ticket.case_id)
    assert entry.data["group"] == "security" and entry.data["mode"] == "round_robin"


def test_round_robin_takes_turns_in_username_order(alice, groups, settings):
    settings.SUPPORT_GROUP_ASSIGNMENT = "round_robin"
    got = []
    for _ in range(4):
        _, ticket = send(alice, "CUST-003", SECURITY)
        ticket.case.refresh_from_db()
        got.append(ticket.case.assignee.username)
    assert got == ["sam", "sid", "sue", "sam"]


def test_least_loaded_picks_the_member_with_fewest_open_cases(alice, groups, settings):
    settings.SUPPORT_GROUP_ASSIGNMENT = "least_loaded"
    from casework.cases.services import case_assign, case_create

    # sam carries two open cases, sid one, sue none.
    for who in ("sam", "sam", "sid"):
        case = case_create(actor="system", case_type="support_ticket", title="other work")
        case_assign(actor="system", case=case, assignee=groups[who])
    security = SupportGroup.objects.get(key="security")
    assert group_pick_member(security).username == "sue"
    got = []
    for _ in range(3):
        _, ticket = send(alice, "CUST-003", SECURITY)
        ticket.case.refresh_from_db()
        got.append(ticket.case.assignee.username)
    # Loads sam 2, sid 1, sue 0: sue. Then sid 1 and sue 1 tie: sid, by username. Then sam 2,
    # sid 2, sue 1: sue.
    assert got == ["sue", "sid", "sue"]


def test_a_vip_billing_question_goes_to_billing(alice, groups):
    _, ticket = send(alice, "CUST-004", "How do I download an invoice?")
    ticket.refresh_from_db()
    ticket.case.refresh_from_db()
    assert ticket.lifecycle == "escalated" and ticket.group.key == "billing"
    assert ticket.case.assignee == groups["bea"]


def test_a_group_without_members_keeps_the_ticket_unassigned_and_says_so(alice, support_data):
    support_group_save(actor="system", key="security")
    _, ticket = send(alice, "CUST-003", SECURITY)
    ticket.refresh_from_db()
    ticket.case.refresh_from_db()
    assert ticket.group.key == "security" and ticket.case.assignee is None
    entry = AuditEntry.objects.get(action="support.escalated_to_group", case_id=ticket.case_id)
    assert entry.data["assignee"] is None and "no active investigator" in entry.data["note"]
    assert not Notification.objects.filter(kind="group_queue").exists()


def test_the_admin_edits_members_and_the_change_is_audited(client, admin_user, groups):
    client.force_login(admin_user)
    group = SupportGroup.objects.get(key="billing")
    response = client.post(f"/admin/support/supportgroup/{group.pk}/change/",
                           {"name": "Billing team", "members": [groups["bea"].pk, groups["sam"].pk]})
    assert response.status_code == 302, response.content[:2000]
    group.refresh_from_db()
    assert group.name == "Billing team"
    assert sorted(group.members.values_list("username", flat=True)) == ["bea", "sam"]
    entry = AuditEntry.objects.filter(action="support.group_updated", actor="root").latest("id")
    assert entry.data["members"] == ["bea", "sam"]


def test_the_queue_shows_one_groups_queue(alice, alice_client, groups):
    _, security = send(alice, "CUST-003", SECURITY)
    _, billing = send(alice, "CUST-004", "How do I download an invoice?")
    page = alice_client.get("/support/?show=escalated&group=security").content.decode()
    assert security.ticket_id in page and billing.ticket_id not in page
    page = alice_client.get("/support/?show=escalated").content.decode()
    assert security.ticket_id in page and billing.ticket_id in page and 'id="support-groups"' in page
    # An unknown group is ignored (every group), not an error.
    assert alice_client.get("/support/?group=nonsense").status_code == 200


def test_a_person_escalates_a_routed_ticket_to_a_group_and_it_stays_open(alice, alice_client, groups):
    from casework.support.models import Ticket

    _, ticket = send(alice, "CUST-002", "The CSV export stopped working this morning, it fails with an error.")
    assert ticket.lifecycle == "routed"
    url = f"/support/tickets/{ticket.ticket_id}/escalate-group/"
    assert b"support-escalate-group-form" in alice_client.get(f"/cases/{ticket.case.reference}/").content
    # Bad input names the field and changes nothing.
    refused = alice_client.post(url, {"group": "nonsense", "reason": "x"}, follow=True).content.decode()
    assert "group: Select a valid choice. nonsense is not one of the available choices." in refused
    assert Ticket.objects.get(pk=ticket.pk).group is None
    response = alice_client.post(url, {"group": "billing", "reason": "It is about the invoice export."})
    assert response.status_code == 302
    ticket = Ticket.objects.select_related("case__assignee", "group").get(pk=ticket.pk)
    assert ticket.lifecycle == "escalated" and ticket.group.key == "billing" and not ticket.case.is_closed
    assert ticket.case.assignee == groups["bea"]
    move = AuditEntry.objects.filter(action="support.state_changed", case_id=ticket.case_id).latest("id")
    assert move.actor == "alice" and move.data["to"] == "escalated" and move.data["group"] == "billing"
    entry = AuditEntry.objects.get(action="support.escalated_to_group", case_id=ticket.case_id)
    assert entry.data["chosen_by"] == "person"
    assert Notification.objects.filter(kind="group_queue", case=ticket.case, recipient_user=groups["bea"]).exists()


def test_a_member_who_left_the_support_team_is_passed_over_and_not_told(alice, groups):
    team_member_remove(actor="system", team=team_of(SUPPORT), user=groups["sam"])
    _, ticket = send(alice, "CUST-003", SECURITY)
    ticket.case.refresh_from_db()
    assert ticket.case.assignee.username == "sid"  # round-robin's first who may see the ticket
    told = Notification.objects.filter(kind="group_queue", case=ticket.case)
    assert sorted(told.values_list("recipient_user__username", flat=True)) == ["sid", "sue"]


def test_a_group_takes_only_people_who_see_support_tickets(client, admin_user, groups):
    fay = person("fay", FRAUD)
    with pytest.raises(ValidationError) as caught:
        support_group_save(actor="system", key="billing", members=[groups["bea"], fay])
    assert "fay" in caught.value.message_dict["members"][0]
    client.force_login(admin_user)
    group = SupportGroup.objects.get(key="billing")
    response = client.post(f"/admin/support/supportgroup/{group.pk}/change/", {"name": "Billing", "members": [fay.pk]})
    assert response.status_code == 200 and "members" in response.context["adminform"].form.errors
    assert list(group.members.values_list("username", flat=True)) == ["bea"]


def test_an_escalation_keeps_the_assignee_a_person_chose(alice, groups):
    """Issue 43: a re-triage escalating the ticket reassigned a case a person had assigned."""
    from casework.cases.services import case_assign

    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    ticket.refresh_from_db()
    assert ticket.lifecycle == "routed"
    case_assign(actor=alice, case=ticket.case, assignee=groups["bea"])
    send(alice, "CUST-002", f"About {ticket.ticket_id}: and now someone hacked my account and changed my password!")
    ticket.refresh_from_db()
    ticket.case.refresh_from_db()
    assert ticket.lifecycle == "escalated" and ticket.group.key == "security"
    assert ticket.case.assignee == groups["bea"]
    kept = AuditEntry.objects.get(action="support.guard_applied", case_id=ticket.case_id,
                                  data__rule="person_assignment_stands")
    assert (kept.data["proposed"], kept.data["decided"]) == ("sam", "bea")
    assert "alice assigned the case to bea" in kept.data["reason"]
