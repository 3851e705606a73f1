"""Durable runs: AgentRun is one pipeline execution for a case, AgentCall one agent or tool call.

A run's `state` is saved after every step, so a run whose worker died resumes from its last
saved step without repeating a finished call (see agents.runtime.pipeline).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class AgentRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING = "waiting", "Waiting for a person"
        COMPLETED = "completed", "Completed"
        # The run got to its end, but at least one agent result carries an error.
        COMPLETED_WITH_ERRORS = "completed_with_errors", "Completed with errors"
        FAILED = "failed", "Failed"
        TIMED_OUT = "timed_out", "Timed out"
        # It waited for a person, and the case was closed (decided) meanwhile.
        CANCELLED = "cancelled", "Ended: case closed"
        # Its next model call was refused: the case's budget would not cover it. It holds no
        # worker; a lead raising the budget puts it back in the queue (casework/budgets).
        BUDGET_REACHED = "budget_reached", "Budget reached"
        # A person ended it where it waited (a lead who would not raise the budget).
        STOPPED = "stopped", "Stopped by a person"

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    # Runs that got to their end (the pipeline's finish ran).
    DONE = (Status.COMPLETED, Status.COMPLETED_WITH_ERRORS)

    # Empty while a run works before its case exists (a message matched to a ticket before
    # the ticket's case is known); agents.services.run_attach_case sets it later.
    case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="agent_runs", null=True,
                             blank=True, db_index=False)  # indexed by (case, pipeline, -created_at)
    pipeline = models.CharField(max_length=40)
    mode = models.CharField(max_length=40, blank=True)
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.QUEUED)  # indexed by agentrun_status_created (leading column): no index of its own to update on every write
    requested_by = models.CharField(max_length=150, blank=True)
    # {"stage_index": n, "results": {key: {...}}, "input": {...}, ...}
    state = models.JSONField(default=dict, blank=True)
    step_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    error = models.TextField(blank=True)
    trace_id = models.CharField(max_length=32, blank=True)
    correlation_id = models.CharField(max_length=64, blank=True)
    provider = models.CharField(max_length=40, blank=True)
    # Set by the worker that claimed the run; its writes are conditional on it.
    claim_token = models.CharField(max_length=32, blank=True, editable=False)
    # When the sweeper (agents.tasks.resume_stale_runs) last sent this run a wake-up because
    # its broker message seemed lost; it waits a full deadline again before the next one.
    redelivered_at = models.DateTimeField(null=True, blank=True, editable=False)
    # A run scheduled for later (a retry spaced out by backoff): no worker claims it, and the
    # sweeper does not wake it, before this time.
    not_before = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["case", "pipeline", "-created_at"]),
            # The sweeper, /healthz and /metrics look for the oldest runs in one status.
            models.Index(fields=["status", "created_at"], name="agentrun_status_created"),
            # The sweeper asks whether any run started lately (is the queue moving?).
            models.Index(fields=["started_at"], name="agentrun_started"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "waiting", "completed", "completed_with_errors",
                                         "failed", "timed_out", "cancelled", "budget_reached", "stopped"]),
                name="agentrun_status_valid",
            )
        ]

    def __str__(self) -> str:
        return f"{self.pipeline}/{self.mode} run #{self.pk} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def rerunnable(self) -> bool:
        """Whether the run may start again (its case aside): not while it works or waits for
        a person, nor once it was ended by its case's close."""
        return self.status not in (*self.ACTIVE, self.Status.WAITING, self.Status.CANCELLED,
                                   self.Status.BUDGET_REACHED)

    @property
    def results(self) -> dict:
        return self.state.get("results", {})

    @property
    def agent_failures(self) -> tuple[int, int]:
        """(failed, total) agent results of the run: what "n of m agents failed" counts."""
        results = [entry for entry in self.results.values() if isinstance(entry, dict)]
        return sum(1 for entry in results if entry.get("error")), len(results)

    @property
    def status_label(self) -> str:
        """The status as the run panel shows it: a run with failed agents says how many."""
        waiting = self.state.get("waiting_for_model") if self.status == self.Status.QUEUED else None
        if waiting:
            return (f"Waiting for the model ({waiting.get('provider')} unreachable since "
                    f"{str(waiting.get('since', ''))[11:19]} UTC; next try {str(waiting.get('next_try', ''))[11:19]} UTC)")
        if self.status == self.Status.BUDGET_REACHED:
            reached = self.state.get("budget_reached") or {}
            return f"Budget reached ({reached.get('message', 'a lead can raise the case budget')})"
        if self.status == self.Status.COMPLETED_WITH_ERRORS:
            failed, total = self.agent_failures
            return f"Completed with errors ({failed} of {total} agent{'s' if total != 1 else ''} failed)"
        return self.get_status_display()

    @property
    def duration_ms(self) -> int | None:
        if self.started_at and self.finished_at:
            return int((self.finished_at - self.started_at).total_seconds() * 1000)
        return None


class AgentCall(models.Model):
    class Kind(models.TextChoices):
        AGENT = "agent", "Agent"
        TOOL = "tool", "Tool"

    class Status(models.TextChoices):
        OK = "ok", "OK"
        ERROR = "error", "Error"

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="calls", db_index=False)  # (run, key)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.AGENT)
    key = models.CharField(max_length=80, help_text="The call's key within its run (e.g. the agent id).")
    name = models.CharField(max_length=80, help_text="Agent id or tool name.")
    stage = models.CharField(max_length=40, blank=True)
    input = models.JSONField(default=dict, blank=True)
    output = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices)
    error = models.TextField(blank=True)
    error_type = models.CharField(max_length=40, blank=True)
    attempts = models.PositiveIntegerField(default=1)
    attempt_log = models.JSONField(default=list, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    model = models.CharField(max_length=80, blank=True)
    provider = models.CharField(max_length=40, blank=True)
    trace_id = models.CharField(max_length=32, blank=True)
    span_id = models.CharField(max_length=16, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["run", "key"]),
            # The dashboard's agent calls panel reads the last 30 days' calls by it, so its cost
            # follows the calls of a month, not every call ever made (bench/growth.py).
            models.Index(fields=["created_at"], name="agentcall_created"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name} ({self.status})"

    @property
    def retries(self) -> int:
        return max(0, self.attempts - 1)
