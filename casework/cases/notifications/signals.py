"""What the notifications tell the case types (they import none of them): a notification's
email was accepted by the mail server, or gave up. A case type whose state rests on that fact
(an access change awaiting the employee its link was emailed to) listens."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with notification=<Notification> (emailed_at set) once the mail server accepted its email.
notification_emailed = Signal()
# Sent with notification=<Notification> (email_failed_at, email_error set) when its email gave up.
notification_email_failed = Signal()
