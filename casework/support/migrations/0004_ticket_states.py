"""Ticket.lifecycle: from active/completed to the declared states (casework.support.states).

Existing rows are mapped by what really happened: an `active` ticket is received (no triage
yet), triage failed (its triage did not finish) or routed; a `completed` one is reply sent if
a reply went out (by a person or automatically), closed without a reply if its case is closed
without one, and otherwise, still open, a drafted answer or an escalation by its triage.
"""

from django.db import migrations, models


def forward(apps, schema_editor):
    Ticket = apps.get_model("support", "Ticket")
    TicketMessage = apps.get_model("support", "TicketMessage")
    replied = set(TicketMessage.objects.filter(direction="agent").values_list("ticket_id", flat=True))
    for ticket in Ticket.objects.select_related("case").iterator():
        closed = ticket.case.status == "closed"
        incomplete = ((ticket.triage or {}).get("result") or {}).get("extracted_info", {}).get(
            "issue_type") == "triage_incomplete"
        if ticket.pk in replied:
            state = "replied"
        elif closed:
            state = "closed_no_reply"
        elif ticket.lifecycle == "active" or ticket.recommended_action in ("", "route_specialist"):
            state = ("received" if not ticket.recommended_action
                     else "triage_failed" if incomplete else "routed")
        elif ticket.recommended_action == "auto_respond":
            state = "answer_ready"
        else:
            state = "escalated"
        completed_at = ticket.completed_at if state in ("replied", "closed_no_reply") else None
        if state in ("replied", "closed_no_reply") and completed_at is None:
            completed_at = ticket.case.closed_at or ticket.first_response_at
        Ticket.objects.filter(pk=ticket.pk).update(lifecycle=state, completed_at=completed_at)


def backward(apps, schema_editor):
    Ticket = apps.get_model("support", "Ticket")
    Ticket.objects.filter(lifecycle__in=["received", "triage_failed", "routed"]).update(lifecycle="active")
    Ticket.objects.exclude(lifecycle="active").update(lifecycle="completed")


class Migration(migrations.Migration):

    dependencies = [
        ('cases', '0006_case_due_at'),
        ('support', '0003_message_intake'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='ticket',
            name='support_ticket_lifecycle_valid',
        ),
        migrations.AlterField(
            model_name='ticket',
            name='lifecycle',
            field=models.CharField(choices=[('received', 'Received, being triaged'), ('triage_failed', 'Triage failed'), ('routed', 'Routed to a specialist'), ('answer_ready', 'Reply drafted, not sent'), ('escalated', 'Escalated, open'), ('replied', 'Reply sent'), ('closed_no_reply', 'Closed without a reply')], default='received', max_length=20),
        ),
        migrations.RunPython(forward, backward),
        migrations.AddConstraint(
            model_name='ticket',
            constraint=models.CheckConstraint(condition=models.Q(('lifecycle__in', ['received', 'triage_failed', 'routed', 'answer_ready', 'escalated', 'replied', 'closed_no_reply'])), name='support_ticket_lifecycle_valid'),
        ),
    ]
