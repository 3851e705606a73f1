"""What taking a person's access away tells the layers above the platform (people imports
none of them: issue 45). Both are sent inside user_deactivate's transaction, with `send`: a
receiver's error rolls the deactivation back, as the direct calls did."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with user=<User> (locked, just made inactive), actor, before the deactivation is audited:
# what the person held goes back. A receiver returns the references of the cases it sent back
# to the queue (the deactivation's audit entry lists them: casework/cases/receivers.py).
user_deactivating = Signal()
# Sent with user=<User>, actor, cases_returned=<list of references> once the deactivation is
# audited: the admins hear which cases came back (casework/cases/notifications/receivers.py).
user_deactivated = Signal()
