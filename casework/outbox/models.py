"""The outbox: events written in the transaction of what caused them, and one delivery per
(event, endpoint) that a worker takes with a conditional UPDATE (casework/outbox/delivery.py)."""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from casework.security.fields import EncryptedTextField


def event_id_new() -> str:
    """The event's stable id, sent as `webhook-id` on every attempt: a receiver drops repeats by it."""
    return f"evt_{uuid.uuid4().hex}"


def secret_new() -> str:
    """A Standard Webhooks secret: `whsec_` and 32 random bytes, base64."""
    import base64

    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


class OutboxEvent(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=event_id_new, editable=False)
    type = models.CharField(max_length=80, db_index=True)
    version = models.PositiveSmallIntegerField(default=1)
    case = models.ForeignKey("cases.Case", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="outbox_events", db_index=False)  # indexed by outbox_event_case_idx
    case_type = models.CharField(max_length=40, blank=True, default="")
    # The whole body every endpoint receives: {"id", "type", "version", "timestamp", "data"}.
    payload = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["case", "created_at"], name="outbox_event_case_idx")]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"


class Endpoint(models.Model):
    """A receiver of signed webhooks. `secret` signs; during a rotation `previous_secret` signs
    too, until `previous_secret_expires_at` (both signatures in one header)."""

    url = models.URLField(max_length=500)
    description = models.CharField(max_length=200, blank=True, default="")
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=300, blank=True, default="")
    # Empty: every event type / every case type.
    event_types = models.JSONField(default=list, blank=True)
    case_types = models.JSONField(default=list, blank=True)
    timeout_seconds = models.PositiveSmallIntegerField(default=10)
    # Encrypted at rest (casework.security.encryption): a database dump shows no secret.
    secret = EncryptedTextField(default=secret_new, editable=False)
    previous_secret = EncryptedTextField(blank=True, default="", editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="webhook_endpoints",
                              help_text="Notified when a delivery is dead-lettered or the endpoint is disabled.")
    # A team's system: it receives only events of the case types the team owns, and none of a
    # restricted case (need-to-know, casework.cases.visibility), whatever it subscribed to. No
    # team: admin-owned, it receives what it subscribed to. PROTECT: deleting the team must not
    # turn its endpoint into one that receives every team's events.
    team = models.ForeignKey("people.Team", null=True, blank=True, on_delete=models.PROTECT,
                             related_name="webhook_endpoints",
                             help_text="The team whose system this is: only its case types' events reach it.")
    # Circuit breaker: when the attempts of the last WEBHOOK_BREAKER_WINDOW_SECONDS are at least
    # WEBHOOK_BREAKER_MIN_ATTEMPTS and at least WEBHOOK_BREAKER_FAILURE_RATE of them failed, it
    # opens and the endpoint is paused until paused_until; its deliveries wait (no attempt is
    # spent). A short run of failures does not open it: a receiver failing 30% of the time
    # under concurrency fails five in a row often enough. After the cool-off it is half-open:
    # one delivery goes as a probe (probe_until is its claim, so no other goes beside it). The
    # probe's 2xx closes the breaker (its counts start again) and the queue resumes; its failure
    # opens it for another cool-off. A probe whose worker died frees its place at probe_until.
    # The window's counts (a maintained aggregate, never a scan of the attempt log): attempts and
    # failures in window number `breaker_window` (now // WEBHOOK_BREAKER_WINDOW_SECONDS) and in
    # the one before it; the sliding window weighs the previous one by how much of it still lies
    # inside (casework.outbox.delivery._breaker_count).
    breaker_window = models.BigIntegerField(default=0, editable=False)
    breaker_attempts = models.PositiveIntegerField(default=0, editable=False)
    breaker_failures = models.PositiveIntegerField(default=0, editable=False)
    breaker_previous_attempts = models.PositiveIntegerField(default=0, editable=False)
    breaker_previous_failures = models.PositiveIntegerField(default=0, editable=False)
    # Shown (admin, API), no longer what opens the breaker.
    consecutive_failures = models.PositiveIntegerField(default=0, editable=False)
    paused_until = models.DateTimeField(null=True, blank=True, editable=False)
    probe_until = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.CheckConstraint(condition=models.Q(timeout_seconds__gte=1, timeout_seconds__lte=60),
                                   name="outbox_endpoint_timeout_range"),
        ]

    def __str__(self) -> str:
        return self.description or self.url

    def signing_secrets(self, now) -> list[str]:
        keep_previous = self.previous_secret and (self.previous_secret_expires_at is None
                                                  or self.previous_secret_expires_at > now)
        return [self.secret, *([self.previous_secret] if keep_previous else [])]

    def subscribes(self, event_type: str, case_type: str, *, team_types=(), restricted: bool = False) -> bool:
        """Whether an event of this type, about a case of `case_type` ("" for none), goes here.
        A team's endpoint: only about an unrestricted case of a type in `team_types` (its team's)."""
        if self.team_id is not None and (not case_type or case_type not in team_types or restricted):
            return False
        return ((not self.event_types or event_type in self.event_types)
                and (not self.case_types or not case_type or case_type in self.case_types))

    def is_paused(self, now) -> bool:
        """Open, or half-open with its probe in flight: nothing but the probe may go."""
        return (self.paused_until is not None and self.paused_until > now) or self.is_probing(now)

    def is_probing(self, now) -> bool:
        return self.probe_until is not None and self.probe_until > now

    def breaker_state(self, now) -> str:
        """closed, open (cooling off), half-open (the next delivery is a probe) or probing."""
        if self.paused_until is None:
            return "closed"
        if self.paused_until > now:
            return "open"
        return "probing" if self.is_probing(now) else "half-open"


class Delivery(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERING = "delivering", "Delivering"
        DELIVERED = "delivered", "Delivered"
        RETRYING = "retrying", "Retrying"  # an attempt failed; the next is at next_attempt_at
        DEAD = "dead", "Dead"  # the last attempt failed, or the receiver answered 410

    event = models.ForeignKey(OutboxEvent, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    state = models.CharField(max_length=12, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # `attempts` when it was last replayed: the retry schedule counts from here.
    retry_base = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # The worker's claim: writes after the attempt are conditional on it; a claim whose
    # lease_until has passed (the worker died mid-request) may be taken again.
    claim_token = models.CharField(max_length=32, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    # When a broker message for it was last sent (on commit, or by the sweep): the sweep
    # re-sends only after WEBHOOK_REDELIVER_AFTER_SECONDS, so a backlog is not sent twice.
    woken_at = models.DateTimeField(null=True, blank=True)
    last_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_response = models.TextField(blank=True, default="")
    last_error = models.CharField(max_length=300, blank=True, default="")
    last_latency_ms = models.PositiveIntegerField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["event", "endpoint"], name="outbox_delivery_once")]
        indexes = [
            models.Index(fields=["state", "next_attempt_at"], name="outbox_delivery_due_idx"),
            models.Index(fields=["endpoint", "state", "created_at"], name="outbox_delivery_endpoint_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → {self.endpoint_id}: {self.state}"


class DeliveryAttempt(models.Model):
    """One HTTP request of a delivery: the log per endpoint and per case."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    status = models.PositiveSmallIntegerField(null=True, blank=True)  # None: no HTTP answer
    response = models.TextField(blank=True, default="")  # truncated (WEBHOOK_RESPONSE_KEEP_CHARS)
    error = models.CharField(max_length=300, blank=True, default="")
    latency_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="outbox_attempt_once")]


class Action(models.Model):
    """What a decision asked another system to do (block a card, revert a change), carried by
    one action event (casework/outbox/catalogue.py: an EventType with `action`), and how far it
    got: requested, delivered (a 2xx to an endpoint), confirmed (by the system that did it,
    through a signed callback, or by a person) or failed. The states and moves are declared in
    casework/cases/actions/states.py; every move goes through the lifecycle transition service."""

    class State(models.TextChoices):
        REQUESTED = "requested", "Requested"
        DELIVERED = "delivered", "Delivered"
        CONFIRMED = "confirmed", "Confirmed"
        FAILED = "failed", "Failed"

    event = models.OneToOneField(OutboxEvent, on_delete=models.PROTECT, related_name="action")
    case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="actions")
    type = models.CharField(max_length=80)
    label = models.CharField(max_length=80, help_text="What is asked, in words: “Card block”.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.REQUESTED)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    requested_at = models.DateTimeField()
    # Unconfirmed past this, the case and the queue flag it (ACTION_CONFIRM_DEADLINE_MINUTES).
    deadline_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    delivered_to = models.CharField(max_length=200, blank=True, default="")
    # Confirmed or failed: when, and by whom: a person (resolved_by), or the system behind an
    # endpoint (resolved_via, its name kept in resolved_by_name should the endpoint go).
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    resolved_via = models.ForeignKey(Endpoint, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    resolved_by_name = models.CharField(max_length=200, blank=True, default="")
    external_reference = models.CharField(max_length=200, blank=True, default="",
                                          help_text="The other system's id for what it did, if it sent one.")
    failure_reason = models.CharField(max_length=500, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-requested_at", "-pk"]
        indexes = [
            models.Index(fields=["case", "requested_at"], name="outbox_action_case_idx"),
            # The overdue flag: open actions by deadline.
            models.Index(fields=["state", "deadline_at"], name="outbox_action_due_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=models.Q(state__in=["requested", "delivered", "confirmed", "failed"]),
                                   name="outbox_action_state_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.state}) {self.event_id}"

    OPEN = (State.REQUESTED, State.DELIVERED)

    def is_overdue(self, now) -> bool:
        return self.state in self.OPEN and self.deadline_at < now


class OutboundEmail(models.Model):
    """One email a decision sends (a support reply), written in the decision's transaction and
    sent by a worker at least once, with the same claim / lease / retry bookkeeping as a
    webhook Delivery (casework/outbox/email.py). `purpose` names who is told of the outcome
    (a handler a case type registered: casework.outbox.email.email_purpose_register);
    `source_id` is that type's own row (a support TicketMessage's pk)."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        SENDING = "sending", "Sending"
        RETRYING = "retrying", "Retrying"  # an attempt failed; the next is at next_attempt_at
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"  # the last attempt failed

    purpose = models.CharField(max_length=60, db_index=True)
    source_id = models.BigIntegerField(null=True, blank=True)
    case = models.ForeignKey("cases.Case", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="outbound_emails")
    from_email = models.CharField(max_length=300)
    to = models.CharField(max_length=300)
    subject = models.CharField(max_length=300)
    body = models.TextField()
    # Threading: our stable Message-ID (with <>), and the ids this one answers.
    message_id = models.CharField(max_length=300, unique=True)
    in_reply_to = models.CharField(max_length=300, blank=True, default="")
    references = models.TextField(blank=True, default="")  # space-separated <ids>, oldest first
    # RFC 3834's Auto-Submitted, only for mail no person wrote: "auto-replied" (an automatic
    # answer to a message), "auto-generated" (a notice). Empty: a person's, sent without it, so
    # the customer's filters do not drop a human answer as automatic.
    auto_submitted = models.CharField(max_length=20, blank=True, default="",
                                      choices=[("", "No (a person wrote it)"), ("auto-replied", "auto-replied"),
                                               ("auto-generated", "auto-generated")])
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    retry_base = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claim_token = models.CharField(max_length=32, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    woken_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True, default="")
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="outbox_email_due_idx")]
        constraints = [
            models.CheckConstraint(condition=models.Q(state__in=["queued", "sending", "retrying", "sent", "failed"]),
                                   name="outbox_email_state_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.subject} → {self.to}: {self.state}"

    @property
    def is_pending(self) -> bool:
        return self.state in (self.State.QUEUED, self.State.SENDING, self.State.RETRYING)
