"""Hooks case-type packages, and what sits on cases, listen to: most are sent after the
transaction commits; case_closing and case_decision_recorded inside it."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with case=<Case>, decision=<Decision>, actor=<user> once a close has committed.
case_closed = Signal()
# Sent with case=<Case> (locked), outcome=<str>, reason=<str>, actor=<user> inside case_close,
# once the outcome and reason are valid and before the decision is written: a case-type package
# refuses a close its own record cannot take by raising (a ValidationError naming the field, a
# 400; a DomainError), and the close writes nothing. Receivers only check; they write nothing.
case_closing = Signal()
# Sent with case=<Case>, assignee=<user>, actor=<user or "system"> once a case was given to
# someone (created with an assignee, or assigned to a new person) and the transaction committed.
case_assigned = Signal()
# Sent with case=<Case>, user=<user> when a person opens the case's page (notifications about
# it count as read: casework/cases/notifications).
case_viewed = Signal()
# Sent with case=<Case> (locked, just closed), decision=<Decision>, actor=<user or "system">
# inside the close's transaction, once the decision is written and before the close is audited:
# what sits on cases records what the decision means to it (a decision confirming fraud flags
# the entities the case names: casework/entities/receivers.py). `send`: an error rolls the
# close back.
case_decision_recorded = Signal()
