"""What the outbox tells the layers above it (it imports none of them: issue 45). Sent inside
the delivery worker's transaction, with `send` (a receiver's error rolls the record back, as a
direct call did)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with delivery=<Delivery> (its state and last answer set), ok=<bool>, now=<datetime>
# when a delivery of an action event (catalogue: an EventType with `action`) got its final
# answer: a 2xx, or dead. The action it carries follows (casework/cases/actions/receivers.py).
action_delivery_answered = Signal()
# Sent with users=<list of User>, subject, body, url, case=<Case or None> when an endpoint's
# owner (or, with no owner, every admin) must be told: the endpoint was disabled, or a
# delivery failed for good. The notifications app turns it into notifications.
endpoint_owner_notice = Signal()
