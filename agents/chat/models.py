"""Conversations with a case's agent (seed 004's send_message / get_history / get_context /
new_conversation): one open conversation per case and user, its messages, and for each answer
what the model saw (tokens in the window, the budget, every pruning) and its trace."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from casework.security.fields import EncryptedJSONField, EncryptedTextField


def _new_trace_id() -> str:
    return secrets.token_hex(16)


class Conversation(models.Model):
    case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="conversations")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    # A new conversation closes the open one (kept, and readable in the audit trail).
    is_open = models.BooleanField(default=True)
    # Every answer's spans join this one trace (seed 004: each conversation has a trace ID).
    trace_id = models.CharField(max_length=32, default=_new_trace_id, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["case", "user"], condition=Q(is_open=True),
                                    name="one_open_conversation_per_case_and_user"),
        ]

    def __str__(self) -> str:
        return f"Conversation #{self.pk} on case {self.case_id} with {self.user_id}"


class ChatMessage(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Agent"

    class Status(models.TextChoices):
        # An answer is written as it arrives: "answering" until it is complete ("done") or
        # broke off ("failed", keeping what arrived, with the error named).
        ANSWERING = "answering", "Answering"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=10, choices=Role.choices)
    # The question and the answer, and the tools the answer called with their arguments and
    # results: encrypted at rest (issue 42), as the runs' calls are (agents.models): they quote
    # the case, an access review's absence details included.
    content = EncryptedTextField()
    # An answer's record: provider, model, tokens, window and budget, pruning, tools, trace.
    provider = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=80, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    window_tokens = models.PositiveIntegerField(default=0)
    budget_tokens = models.PositiveIntegerField(default=0)
    context_events = models.JSONField(default=list, blank=True)
    tool_calls = EncryptedJSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    trace_id = models.CharField(max_length=32, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DONE)
    # When a worker took the answer on (a second delivery of its task finds it taken), and
    # when its text last grew: an answer with no progress for CHAT_ANSWER_STALE_SECONDS failed.
    started_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            # The sweep that re-sends lost answers (agents.chat.answering.messages_resend_lost)
            # reads only the few answering ones.
            models.Index(fields=["updated_at"], condition=Q(status="answering"), name="chatmessage_answering"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(role__in=["user", "assistant"]), name="chatmessage_role_valid"),
            models.CheckConstraint(condition=Q(status__in=["answering", "done", "failed"]),
                                   name="chatmessage_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"
