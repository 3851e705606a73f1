"""Escalation groups (issue 25.4): where an escalated ticket goes, and who in the group gets it.

  ticket_group_for      the ticket's group: "security" when the customer's messages raise a
                        security concern (the seed's keyword table), else its category
                        (billing, technical, general; general when untriaged), each mapped to a
                        group by SUPPORT_GROUP_FOR_CATEGORY.
  group_pick_member     one member, by SUPPORT_GROUP_ASSIGNMENT:
                          round_robin   the member after the one who got the group's last
                                        ticket, in username order (the cursor is the group's
                                        last_assigned);
                          least_loaded  the member with the fewest open cases assigned, ties
                                        to the earlier username.
                        Only active investigators who may see the ticket's case are
                        eligible (need-to-know, casework.cases.visibility: a member who left
                        the support team, or is not named on a restricted ticket, is passed
                        over; case_assign refuses them anyway).
  ticket_escalate_to_group
                        the ticket joins the group's queue, its case is assigned to the picked
                        member through case_assign (audited) and every eligible member is notified.
                        An escalation by the agents keeps a case a person assigned with its
                        assignee (the override is audited as support.guard_applied).
                        A group with no eligible member keeps the ticket unassigned in its
                        queue, and says so in the audit trail.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q
from django.urls import reverse

from audit.services import audit_record
from casework.cases.sla import DONE_STATUSES
from casework.cases.visibility import people_seeing_types, people_who_may_see
from casework.people.roles import ADMIN, is_investigator
from casework.support.models import SupportGroup, Ticket

SUPPORT = "support_ticket"
GROUP_NAMES = {"billing": "Billing", "technical": "Technical", "general": "General", "security": "Security"}


def ticket_category(ticket: Ticket) -> str:
    """billing, technical, general or security (a security concern outranks the category)."""
    from casework.support.agents.rules import keyword_classes

    texts = []
    for message in ticket.messages.filter(direction="customer"):
        texts += [message.text, message.text_en]
    if "security" in keyword_classes("\n".join(t for t in texts if t)):
        return "security"
    return ticket.ticket_type or "general"


def ticket_group_for(ticket: Ticket) -> SupportGroup | None:
    key = settings.SUPPORT_GROUP_FOR_CATEGORY.get(ticket_category(ticket), "general")
    return SupportGroup.objects.filter(key=key).first()


def people_seeing_support() -> Q:
    """Who may be in a group: people who see support cases (a team owning them), and admins."""
    return (Q(pk__in=people_seeing_types([SUPPORT])) | Q(is_superuser=True) | Q(groups__name=ADMIN))


def group_eligible_members(group: SupportGroup, case=None) -> list[User]:
    """The group's active investigators who may see `case` (or, without one, support cases)."""
    members = group.members.filter(is_active=True)
    scope = people_who_may_see(case) if case is not None else User.objects.filter(people_seeing_support())
    members = members.filter(pk__in=scope.values("pk")).distinct().order_by("username")
    return [u for u in members if is_investigator(u)]


def group_pick_member(group: SupportGroup, *, case=None, mode: str | None = None) -> User | None:
    mode = mode or settings.SUPPORT_GROUP_ASSIGNMENT
    members = group_eligible_members(group, case)
    if not members:
        return None
    if mode == "least_loaded":
        open_cases = Count("assigned_cases", filter=~Q(assigned_cases__status__in=DONE_STATUSES))
        load = dict(User.objects.filter(pk__in=[m.pk for m in members]).annotate(n=open_cases)
                    .values_list("pk", "n"))
        return min(members, key=lambda m: (load.get(m.pk, 0), m.username))
    # round_robin: the member after the last one (by username), wrapping around.
    last = group.last_assigned
    if last is None:
        return members[0]
    after = [m for m in members if m.username > last.username]
    return after[0] if after else members[0]


@transaction.atomic
def ticket_escalate_to_group(*, actor, ticket: Ticket, reason: str = "", group: SupportGroup | None = None) -> Ticket:
    """Put an escalated ticket in its group's queue (`group`, or its category's), assign it
    within the group, notify the members. A ticket already in that group whose case is assigned
    to one of its members is left as it is (a re-triage escalating it again does not move it)."""
    from casework.cases.notifications.models import Notification
    from casework.cases.notifications.services import notification_send
    from casework.cases.services import case_assign

    ticket = Ticket.objects.select_for_update(of=("self",)).select_related("case", "group").get(pk=ticket.pk)
    if ticket.case.is_closed:
        return ticket
    group = group or ticket_group_for(ticket)
    if group is None:
        audit_record(actor=actor, action="support.group_missing", case=ticket.case, obj=ticket,
                     data={"ticket_id": ticket.ticket_id, "category": ticket_category(ticket),
                           "reason": "No support group is configured for this category: the ticket stays in "
                                     "the support queue."})
        return ticket
    group = SupportGroup.objects.select_for_update().get(pk=group.pk)
    members = group_eligible_members(group, ticket.case)
    if ticket.group_id == group.pk and ticket.case.assignee_id in {m.pk for m in members}:
        return ticket
    assignee = group_pick_member(group, case=ticket.case)
    kept_by = _person_assignment(actor, ticket)
    if kept_by:
        # Agents recommend; people decide: the group's queue gets the ticket, the person's
        # assignee keeps the case (DESIGN.md, "Agents recommend; people decide").
        from casework.support.guards import Override

        held = ticket.case.assignee.get_username()
        override = Override("person_assignment_stands", "assignee", assignee.get_username() if assignee else "",
                            held, f"{kept_by} assigned the case to {held}; an escalation by the agents does not "
                                  f"reassign it (the {group.name} group would have given it to "
                                  f"{assignee.get_username() if assignee else 'nobody'}).")
        audit_record(actor="system", action="support.guard_applied", case=ticket.case, obj=ticket,
                     data={"run": ticket.triage.get("run"), **override.as_dict()})
        assignee = None
    ticket.group = group
    ticket.save(update_fields=["group", "updated_at"])
    audit_record(actor=actor, action="support.escalated_to_group", case=ticket.case, obj=ticket,
                 data={"ticket_id": ticket.ticket_id, "group": group.key, "category": ticket_category(ticket),
                       "chosen_by": "person" if isinstance(actor, User) else "category",
                       "mode": settings.SUPPORT_GROUP_ASSIGNMENT,
                       "assignee": assignee.get_username() if assignee else None,
                       "reason": (reason or "")[:500] or None,
                       **({"note": f"Kept with {ticket.case.assignee.get_username()}, whom {kept_by} assigned."}
                          if kept_by else {} if assignee else
                          {"note": "The group has no active investigator who may see the ticket: unassigned."})})
    if assignee is not None:
        case_assign(actor=actor, case=ticket.case, assignee=assignee)
        group.last_assigned = assignee
        group.save(update_fields=["last_assigned"])
    for member in members:
        notification_send(
            actor=actor, kind=Notification.Kind.GROUP_QUEUE, case=ticket.case, user=member,
            subject=f"{ticket.case.reference} escalated to {group.name}",
            body=(f"{ticket.ticket_id} ({ticket.case.title}) was escalated to the {group.name} group"
                  + (f"; it stays with {ticket.case.assignee.get_username()}." if kept_by else
                     f" and assigned to {assignee.get_username()}." if assignee else "; nobody is assigned yet.")),
            url=reverse("cases:detail", args=[ticket.case.reference]))
    return ticket


def _person_assignment(actor, ticket: Ticket) -> str | None:
    """Who assigned the case, when a person did and the escalation is the agents' (a person
    escalating chooses anew)."""
    from casework.cases.selectors import case_assignee_set_by

    if isinstance(actor, User) or ticket.case.assignee_id is None:
        return None
    return case_assignee_set_by(ticket.case)


@transaction.atomic
def support_group_save(*, actor, key: str, name: str = "", members: list[User] | None = None) -> SupportGroup:
    """Create or update a group (admin, demo); audited with its member list. Its members are
    people who see support cases (ValidationError on `members` naming the others)."""
    if members:
        allowed = set(User.objects.filter(people_seeing_support(), pk__in=[m.pk for m in members])
                      .values_list("pk", flat=True))
        outside = sorted(m.get_username() for m in members if m.pk not in allowed)
        if outside:
            raise ValidationError({"members": f"{', '.join(outside)}: in no team that sees support tickets."})
    group = SupportGroup.objects.filter(key=key).first() or SupportGroup(key=key)
    created = group.pk is None
    group.name = name or group.name or GROUP_NAMES.get(key, key)
    group.full_clean()
    group.save()
    if members is not None:
        group.members.set(members)
    audit_record(actor=actor, action="support.group_created" if created else "support.group_updated", obj=group,
                 data={"key": group.key, "name": group.name,
                       "members": sorted(group.members.values_list("username", flat=True))})
    return group


@transaction.atomic
def ticket_escalate_to_group_by_person(*, actor, ticket: Ticket, group: str, reason: str) -> Ticket:
    """A person escalates the ticket to a group (it stays open, in that group's queue, assigned
    within it): the ticket moves to escalated through its lifecycle, audited with the reason."""
    from casework.support.states import TicketState
    from casework.support.tickets import _lock, _move

    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why the ticket is escalated."})
    target = SupportGroup.objects.filter(key=group).first()
    if target is None:
        raise ValidationError({"group": f"Choose one of: {', '.join(SupportGroup.Key.values)}."})
    ticket = _lock(ticket)
    ticket = _move(actor=actor, ticket=ticket, to=TicketState.ESCALATED, reason=reason,
                   data={"group": target.key})
    return ticket_escalate_to_group(actor=actor, ticket=ticket, reason=reason, group=target)
