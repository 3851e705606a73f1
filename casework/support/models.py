"""Support tickets (seed 001): customers, one ticket per SUP- case, its thread, and the
knowledge base the specialists search.

A ticket's state (Ticket.lifecycle) is declared in casework.support.states: received, triage
failed, routed, reply drafted, escalated, reply sent, closed without a reply; every change goes
through casework.cases.lifecycle's lifecycle_transition. Only received, failed and routed
tickets can be matched by a new message (the seed's activated tickets). Tickets and messages
are created only through casework.support.services.
"""

from __future__ import annotations

from django.contrib.postgres.search import SearchVectorField
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from casework.cases.models import Case
from casework.support.states import MATCHABLE, TicketState

TICKET_ID_PATTERN = r"^TKT-[A-Z0-9]{8}$"
URGENCY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}


class Plan(models.TextChoices):
    FREE = "free", "Free"
    PRO = "pro", "Pro"
    ENTERPRISE = "enterprise", "Enterprise"


class Urgency(models.TextChoices):
    CRITICAL = "critical", "Critical"
    HIGH = "high", "High"
    MEDIUM = "medium", "Medium"
    LOW = "low", "Low"


class TicketType(models.TextChoices):
    BILLING = "billing", "Billing"
    TECHNICAL = "technical", "Technical"
    GENERAL = "general", "General"


class RecommendedAction(models.TextChoices):
    AUTO_RESPOND = "auto_respond", "Auto-respond"
    ROUTE_SPECIALIST = "route_specialist", "Route to specialist"
    ESCALATE_HUMAN = "escalate_human", "Escalate to a person"


class Customer(models.Model):
    customer_id = models.CharField(max_length=40, unique=True,
                                   validators=[RegexValidator(r"^[A-Za-z0-9_.:-]+$", "Letters, digits, _ . : - only.")])
    name = models.CharField(max_length=120, blank=True)
    email = models.EmailField(blank=True)
    plan = models.CharField(max_length=12, choices=Plan.choices, default=Plan.FREE)
    tenure_months = models.PositiveIntegerField(default=0)
    seats = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    region = models.CharField(max_length=40, blank=True)
    vip = models.BooleanField(default=False, help_text="Set by an admin; a VIP's tickets go to a person.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["customer_id"]
        constraints = [
            models.CheckConstraint(condition=Q(plan__in=["free", "pro", "enterprise"]), name="support_customer_plan_valid"),
            models.CheckConstraint(condition=Q(seats__gte=1), name="support_customer_seats_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.customer_id} {self.name}".strip()

    def as_lookup(self) -> dict:
        """What customer_lookup returns (the seed's customer_info, plus the VIP flag)."""
        return {"customer_id": self.customer_id, "name": self.name, "plan": self.plan,
                "tenure_months": self.tenure_months, "seats": self.seats, "region": self.region, "vip": self.vip}


class Ticket(models.Model):
    Lifecycle = TicketState

    case = models.OneToOneField(Case, on_delete=models.PROTECT, related_name="support_ticket")
    ticket_id = models.CharField(max_length=12, unique=True, validators=[RegexValidator(TICKET_ID_PATTERN)])
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="tickets")
    channel = models.CharField(max_length=20, default="api")
    # Written only through lifecycle_transition (casework.support.states.SUPPORT_LIFECYCLE).
    lifecycle = models.CharField(max_length=20, choices=TicketState.choices, default=TicketState.RECEIVED)
    # From the latest triage; empty until the first one lands.
    language = models.CharField(max_length=8, blank=True)
    urgency = models.CharField(max_length=10, choices=Urgency.choices, blank=True)
    ticket_type = models.CharField(max_length=10, choices=TicketType.choices, blank=True)
    recommended_action = models.CharField(max_length=20, choices=RecommendedAction.choices, blank=True)
    # The latest triage as the page and the API show it (TriageResult + supervisor, KB hits,
    # translation status, failures, the run it came from).
    triage = models.JSONField(default=dict, blank=True)
    suggested_reply = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    triaged_at = models.DateTimeField(null=True, blank=True)
    first_response_at = models.DateTimeField(null=True, blank=True)
    # When it reached an end state: a reply went out, or a person closed it without one.
    completed_at = models.DateTimeField(null=True, blank=True)
    # The customer wrote back to the solved ticket's thread within SUPPORT_REOPEN_DAYS (the last time).
    reopened_at = models.DateTimeField(null=True, blank=True)
    # A ticket opened by an answer to an older ticket's thread after SUPPORT_REOPEN_DAYS.
    follows = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="followed_by")
    # The escalation group whose queue holds it (casework.support.groups); null until escalated.
    group = models.ForeignKey("support.SupportGroup", null=True, blank=True, on_delete=models.PROTECT,
                              related_name="tickets")
    # Since when it waits on the customer (state pending; the SLA clock is paused meanwhile).
    pending_since = models.DateTimeField(null=True, blank=True)
    # Seconds the resolution clock stood still in earlier pending spells (selectors.sla_clock).
    sla_paused_seconds = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["customer", "lifecycle"]),
                   # The matcher's candidates: a customer's most recently active tickets.
                   models.Index(fields=["customer", "-updated_at", "-id"], name="support_ticket_recent")]
        constraints = [
            models.CheckConstraint(condition=Q(lifecycle__in=TicketState.values), name="support_ticket_lifecycle_valid"),
            models.CheckConstraint(condition=Q(urgency__in=["", "critical", "high", "medium", "low"]),
                                   name="support_ticket_urgency_valid"),
            models.CheckConstraint(condition=Q(ticket_type__in=["", "billing", "technical", "general"]),
                                   name="support_ticket_type_valid"),
            models.CheckConstraint(
                condition=Q(recommended_action__in=["", "auto_respond", "route_specialist", "escalate_human"]),
                name="support_ticket_action_valid"),
        ]

    def __str__(self) -> str:
        return self.thread_id

    @property
    def thread_id(self) -> str:
        """The seed's {customer_id}:{ticket_id}, shown and given by the API. Its runs are
        correlated by the ticket id alone: the audit chain hashes correlation ids, so they may
        hold nothing an erasure must remove (casework.privacy.erasure)."""
        return f"{self.customer.customer_id}:{self.ticket_id}"

    @property
    def is_active(self) -> bool:
        """A new message of the customer may join it (the seed's activated ticket)."""
        return self.lifecycle in MATCHABLE


class TicketMessage(models.Model):
    class Direction(models.TextChoices):
        CUSTOMER = "customer", "Customer"
        AGENT = "agent", "Agent"

    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="messages")
    direction = models.CharField(max_length=10, choices=Direction.choices)
    text = models.TextField(help_text="As written (the customer's language).")
    text_en = models.TextField(blank=True, help_text="English translation; empty when not translated.")
    channel = models.CharField(max_length=20, blank=True)
    sent_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="support_replies")
    # A reply the system sent on its own (auto_respond with SUPPORT_AUTO_SEND=true).
    auto_sent = models.BooleanField(default=False)
    # How a customer's message found its ticket: {"run", "matched", "confidence", "note"}.
    intake = models.JSONField(default=dict, blank=True)
    # Email threading: the message's Message-ID (with <>): a customer's as received, ours as
    # sent (the same as its email's); an answer's In-Reply-To / References find the ticket by it.
    email_message_id = models.CharField(max_length=300, blank=True, default="")
    email_subject = models.CharField(max_length=300, blank=True, default="")
    # A reply's email (casework.outbox: queued, sent or failed); none when the customer has no address.
    email = models.OneToOneField("outbox.OutboundEmail", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="support_message")
    # A person's reply to a non-English customer (issue 25.3): {"status": pending, translated,
    # not_translated_offline, not_translated or failed, "language", "as_written", "error"}.
    translation = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["email_message_id"], name="support_message_email_id_idx",
                                condition=~Q(email_message_id=""))]
        constraints = [
            models.CheckConstraint(condition=Q(direction__in=["customer", "agent"]), name="support_message_direction_valid"),
            models.CheckConstraint(condition=~Q(text=""), name="support_message_text_required"),
        ]

    def __str__(self) -> str:
        return f"{self.direction} message on {self.ticket_id}"


class KBArticle(models.Model):
    article_id = models.CharField(max_length=20, unique=True,
                                  validators=[RegexValidator(r"^kb_[0-9]{3,}$", "kb_ followed by digits, e.g. kb_002.")])
    title = models.CharField(max_length=200)
    category = models.CharField(max_length=10, choices=TicketType.choices)
    body = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)
    # PostgreSQL only (a tsvector with a GIN index, migration 0002); SQLite keeps it empty
    # and ranks in Python (casework.support.search).
    search_vector = SearchVectorField(null=True, editable=False)

    class Meta:
        ordering = ["article_id"]
        constraints = [
            models.CheckConstraint(condition=Q(category__in=["billing", "technical", "general"]),
                                   name="support_kb_category_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.article_id} {self.title}"


class InboundEmail(models.Model):
    """Every email posted to the inbound endpoints, kept as received (the original, before the
    quoted history and signature are stripped for triage), with what became of it. Its
    Message-ID is the idempotency key: a provider's retry finds it and changes nothing."""

    class Outcome(models.TextChoices):
        OPENED = "opened", "Opened a ticket"
        JOINED = "joined", "Joined its ticket"
        REOPENED = "reopened", "Reopened its ticket"
        FOLLOW_UP = "follow_up", "Opened a ticket following an older one"
        INTAKE = "intake", "Sent to intake (the matcher, active tickets only)"
        HELD = "held", "Held for a person (unknown sender)"
        AUTO_REPLY = "auto_reply", "Dropped: an automatic reply"
        LOOP = "loop", "Dropped: a mail loop (our own mail)"
        REFUSED = "refused", "Refused (no text, or no sender)"

    provider = models.CharField(max_length=20)
    message_id = models.CharField(max_length=300, unique=True)
    from_email = models.CharField(max_length=300, blank=True)
    from_name = models.CharField(max_length=200, blank=True)
    subject = models.CharField(max_length=300, blank=True)
    in_reply_to = models.CharField(max_length=300, blank=True)
    references = models.TextField(blank=True)
    raw = models.TextField(help_text="The message as received (RFC 5322).")
    text = models.TextField(blank=True, help_text="The text part, whole.")
    stripped = models.TextField(blank=True, help_text="Without quoted history and signature: what triage reads.")
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    note = models.CharField(max_length=500, blank=True)
    customer = models.ForeignKey(Customer, null=True, blank=True, on_delete=models.SET_NULL, related_name="emails")
    ticket = models.ForeignKey(Ticket, null=True, blank=True, on_delete=models.SET_NULL, related_name="emails")
    # Attachments: [{"name", "size", "sha256", "attachment"} or {"name", "refused"}].
    attachments = models.JSONField(default=list, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [models.Index(fields=["outcome", "received_at"], name="support_inbound_outcome_idx")]

    def __str__(self) -> str:
        return f"{self.from_email}: {self.subject} ({self.outcome})"


class SupportGroup(models.Model):
    """Where an escalated ticket goes (issue 25.4): one of four groups, its members people who
    work support (investigators; case_assign refuses anyone else)."""

    class Key(models.TextChoices):
        BILLING = "billing", "Billing"
        TECHNICAL = "technical", "Technical"
        GENERAL = "general", "General"
        SECURITY = "security", "Security"

    key = models.CharField(max_length=12, unique=True, choices=Key.choices)
    name = models.CharField(max_length=80)
    members = models.ManyToManyField("auth.User", blank=True, related_name="support_groups")
    # Round-robin's cursor: the member who got the group's last ticket.
    last_assigned = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="+")

    class Meta:
        ordering = ["key"]
        constraints = [
            models.CheckConstraint(condition=Q(key__in=["billing", "technical", "general", "security"]),
                                   name="support_group_key_valid"),
        ]

    def __str__(self) -> str:
        return self.name


class TicketFeedback(models.Model):
    """The customer's answer to "Did this answer your question?" on one reply (one answer per
    reply). What the reply was (auto-sent or a person's, its category, the KB article behind
    it) is copied at answer time, so the dashboard needs no join through the triage."""

    message = models.OneToOneField(TicketMessage, on_delete=models.CASCADE, related_name="feedback")
    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="feedback")
    solved = models.BooleanField()
    auto_sent = models.BooleanField()
    category = models.CharField(max_length=10, blank=True)
    article_id = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["auto_sent", "category"]), models.Index(fields=["article_id"])]

    def __str__(self) -> str:
        return f"{'solved' if self.solved else 'not solved'} on {self.ticket_id}"
