"""Durable runs: AgentRun is one pipeline execution for a case, AgentCall one agent or tool call.

A run's `state` is saved after every step, so a run whose worker died resumes from its last
saved step without repeating a finished call (see agents.runtime.pipeline).

What a pipeline read and wrote is encrypted at rest (issue 42; casework.security.fields): a
run's state, each call's input and output, a paused call's arguments, snapshot and reason. They
quote the case whole (an access review's prompts carry the absence details, health data), so
a database dump must not show them. The ORM reads them whole; the database cannot filter on
them, so what is counted or filtered lives beside them in clear: the status, the keys, and a
call's `output_verdict` (the one enumerated value of its output that reports count, e.g. a fraud
orchestrator's risk level, named by its agent's `verdict_key`).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from casework.security.fields import EncryptedJSONField, EncryptedTextField


class AgentRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING = "waiting", "Waiting for a person"
        # Paused before a consequential tool call until a person approves, edits or denies it
        # (agents.runtime.pause): no worker holds it; the answer queues it again.
        WAITING_APPROVAL = "waiting_approval", "Waiting for approval"
        # Nobody answered its approval within AGENT_APPROVAL_TTL_SECONDS: the step never ran.
        APPROVAL_EXPIRED = "approval_expired", "Approval expired"
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
    # {"stage_index": n, "results": {key: {...}}, "input": {...}, ...}; encrypted (module docstring)
    state = EncryptedJSONField(default=dict, blank=True)
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
                condition=Q(status__in=["queued", "running", "waiting", "waiting_approval", "approval_expired",
                                         "completed", "completed_with_errors", "failed", "timed_out",
                                         "cancelled", "budget_reached", "stopped"]),
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
        return self.status not in (*self.ACTIVE, self.Status.WAITING, self.Status.WAITING_APPROVAL,
                                   self.Status.CANCELLED, self.Status.BUDGET_REACHED)

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
            pause = self.pauses.filter(kind=RunPause.Kind.BUDGET, status=RunPause.Status.PENDING).first()
            return f"Budget reached ({pause.reason if pause and pause.reason else 'a lead can raise the case budget'})"
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
    # The agent's messages' data (or a tool's arguments) and its answer (or a tool's result):
    # encrypted at rest (module docstring).
    input = EncryptedJSONField(default=dict, blank=True)
    output = EncryptedJSONField(null=True, blank=True)
    # The output's value under its agent's verdict_key (agents.runtime.agent.Agent), in clear
    # for the reports that count it: an enumerated word ("high"), never free text.
    output_verdict = models.CharField(max_length=20, blank=True, default="")
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


class RunPause(models.Model):
    """A run stopped at a step until a person answers (agents.runtime.pause): an approval of a
    consequential tool call, or (kind budget) a case's budget reached. The run holds nothing
    while it waits; this row holds the pending step, and the answer that resumes it."""

    class Kind(models.TextChoices):
        APPROVAL = "approval", "Approval"
        BUDGET = "budget", "Budget"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        EXPIRED = "expired", "Expired"
        # The run was ended otherwise (its case closed, a lead stopped it).
        CANCELLED = "cancelled", "Cancelled"

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="pauses")
    # The run's case, for the inbox and its need-to-know filter (one visibility rule).
    case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="run_pauses", null=True,
                             blank=True, db_index=False)  # indexed by (case, status)
    case_type = models.CharField(max_length=40, blank=True)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.APPROVAL)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    # The call of the step that waits (its CallSpec key) and the step's name.
    call_key = models.CharField(max_length=80)
    step = models.CharField(max_length=80, blank=True)
    agent = models.CharField(max_length=80, blank=True)
    tool = models.CharField(max_length=80, blank=True)
    # Encrypted at rest, as the run's calls are (module docstring): the arguments quote the case.
    arguments = EncryptedJSONField(default=dict, blank=True)
    # What the agent said with the call (the model's text beside it), and the policy that asked.
    reason = EncryptedTextField(blank=True)
    policy = models.CharField(max_length=200, blank=True)
    # Where the agent's loop stood (its conversation, the calls still to make): the resume's input.
    snapshot = EncryptedJSONField(default=dict, blank=True)
    # The answer: who, when, the arguments approved (as edited), a denial's reason.
    decided_by = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    approved_arguments = EncryptedJSONField(null=True, blank=True)
    answer = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # Set in the transaction that saves the resumed step: the answer was used, once.
    resumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "expires_at"], name="runpause_status_expires"),
            models.Index(fields=["case", "status"], name="runpause_case_status"),
            models.Index(fields=["run", "status"], name="runpause_run_status"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["pending", "approved", "denied", "expired", "cancelled"]),
                                   name="runpause_status_valid"),
            models.CheckConstraint(condition=Q(kind__in=["approval", "budget"]), name="runpause_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} for {self.tool or self.step} on run #{self.run_id} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING


class ApprovalPolicy(models.Model):
    """An admin's override of AGENT_APPROVALS for one tool, on one case type or on all
    (case_type blank). The most specific row wins over the settings (agents.runtime.approval)."""

    class Mode(models.TextChoices):
        ALWAYS = "always", "Always ask a person"
        ABOVE = "above", "Ask when an argument is above a threshold"
        NEVER = "never", "Never ask"

    tool = models.CharField(max_length=80)
    case_type = models.CharField(max_length=40, blank=True, help_text="Blank: every case type.")
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.ALWAYS)
    argument = models.CharField(max_length=80, blank=True,
                                help_text="For 'above': the argument compared (e.g. amount, priority).")
    threshold = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True,
                                    help_text="For 'above': a call whose argument exceeds this asks a person.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "approval policies"
        ordering = ["tool", "case_type"]
        constraints = [
            models.UniqueConstraint(fields=["tool", "case_type"], name="approvalpolicy_tool_case_type"),
            models.CheckConstraint(condition=Q(mode__in=["always", "above", "never"]), name="approvalpolicy_mode_valid"),
            models.CheckConstraint(condition=~Q(mode="above") | (Q(threshold__isnull=False) & ~Q(argument="")),
                                   name="approvalpolicy_above_has_threshold"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} on {self.case_type or 'every case type'}: {self.mode}"

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        if self.mode == self.Mode.ABOVE:
            errors = {}
            if not self.argument:
                errors["argument"] = "Name the argument compared (e.g. amount, priority)."
            if self.threshold is None:
                errors["threshold"] = "Give the number above which a person approves."
            if errors:
                raise ValidationError(errors)

    def as_rule(self) -> dict:
        if self.mode == self.Mode.ABOVE:
            return {"mode": "above", "argument": self.argument, "threshold": float(self.threshold)}
        return {"mode": self.mode}
