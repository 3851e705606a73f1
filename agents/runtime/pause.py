"""Durable pause and resume of a run: a step waits for a person, and nothing waits with it.

Shared by approvals (a consequential tool call waits for a person's yes, edit or no) and
budgets (a call waits because its case's budget is reached). One RunPause row per waiting
call holds all there is: the call (its CallSpec key), the tool and arguments, the agent's
reason, and a snapshot of where the agent's tool loop stood.

The API, small on purpose:

  Executor side (agents.runtime.pipeline, in the transaction that saves the step):
    pause_open(run=, kind=, call_key=, ...)      a RunPause for one waiting call, audited;
                                                 the executor then gives up the run's claim
                                                 with the run in WAITING_STATUS[kind].
    pauses_answered(run)                         {call_key: {"snapshot", "answer"}}: what a
                                                 resumed step's calls continue from.
    pauses_mark_resumed(run, keys)               the answers were used (once), with the step.

  People's side (services, any process):
    pause_answer(pause=, actor=, approve=, arguments=, reason=, tool=)
                                                 approve (arguments edited within `tool`'s
                                                 schema: InvalidArguments names the field)
                                                 or deny; the run is queued again once no
                                                 other call of it waits. Audited.
    pause_release(pause=, actor=, answer=)       a non-approval pause let go (a lead raised
                                                 the budget): the run is queued again.
    pause_stop(pause=, actor=, status=, run_status=, reason=)
                                                 the run ends here, in `run_status` (expired,
                                                 or a lead stopped it). Audited.
    pauses_expire(now=)                          every pending approval past its expires_at:
                                                 expired, its run ended "Approval expired".

A resumed run is a new task reading the database: it survives any worker's death while it
waits. The wait does not count against the run's deadline (RUN_TIMEOUT_SECONDS): its
started_at moves forward by the time it waited. The signals `run_paused` and `run_resumed`
(sent on commit) let the layers above notify the case's assignee, and send the resumed run's
wake-up (agents.signals).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError as PydanticValidationError

from agents.llm.base import Message, ToolCall
from agents.models import AgentRun, RunPause
from agents.runtime.signals import run_paused, run_resumed
from agents.runtime.tools import Tool, argument_names
from audit.services import audit_record

logger = logging.getLogger(__name__)

# The run's status while a call of this kind waits.
WAITING_STATUS: dict[str, str] = {RunPause.Kind.APPROVAL: AgentRun.Status.WAITING_APPROVAL,
                                  RunPause.Kind.BUDGET: AgentRun.Status.BUDGET_REACHED}
# A run whose step waits for both an approval and its budget shows the approval (a person must
# answer it either way); it resumes once neither waits.
WAITING_STATUSES = tuple(dict.fromkeys(WAITING_STATUS.values()))


class InvalidArguments(ValueError):
    """Edited arguments that do not fit the tool's schema; `field` names the first bad one."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class NotPending(ValueError):
    """The pause was answered, expired or cancelled already."""


# --- The loop's snapshot ------------------------------------------------------------------

def _message_dump(m: Message) -> dict:
    return {"role": m.role, "content": m.content, "tool_call_id": m.tool_call_id, "name": m.name,
            "tool_calls": [_call_dump(c) for c in m.tool_calls]}


def _call_dump(c: ToolCall) -> dict:
    return {"id": c.id, "name": c.name, "arguments": c.arguments, "raw_arguments": c.raw_arguments}


def snapshot_take(messages: list[Message], turn: int, waiting: list[ToolCall], result) -> dict:
    """Where a tool loop stands, as JSON: its conversation, the turn, the calls still to make
    (the waiting one first), and what the call spent and did so far."""
    return {"messages": [_message_dump(m) for m in messages], "turn": turn,
            "calls": [_call_dump(c) for c in waiting],
            "spent": {"input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
                      "cost_usd": result.cost_usd, "attempt_log": result.attempt_log,
                      "tool_calls": result.tool_calls, "context_events": result.context_events,
                      "model": result.model}}


def snapshot_restore(snapshot: dict, result) -> tuple[list[Message], int, list[ToolCall]]:
    """The loop's conversation, turn and waiting calls back; what it spent goes into `result`."""
    messages = [Message(role=m["role"], content=m["content"], tool_call_id=m.get("tool_call_id", ""),
                        name=m.get("name", ""), tool_calls=[ToolCall(**c) for c in m.get("tool_calls", [])])
                for m in snapshot["messages"]]
    spent = snapshot.get("spent", {})
    result.input_tokens += spent.get("input_tokens", 0)
    result.output_tokens += spent.get("output_tokens", 0)
    result.cost_usd += spent.get("cost_usd", 0.0)
    result.attempt_log[:0] = spent.get("attempt_log", [])
    result.tool_calls[:0] = spent.get("tool_calls", [])
    result.context_events[:0] = spent.get("context_events", [])
    result.model = result.model or spent.get("model", "")
    return messages, snapshot.get("turn", 1), [ToolCall(**c) for c in snapshot.get("calls", [])]


# --- Executor side --------------------------------------------------------------------------

def pause_open(*, run: AgentRun, kind: str, call_key: str, step: str = "", agent: str = "", tool: str = "",
               arguments: dict | None = None, reason: str = "", policy: str = "", snapshot: dict | None = None,
               ttl_seconds: int | None = None) -> RunPause:
    """A waiting call of `run`, in the caller's transaction (the executor's, which also moves
    the run to WAITING_STATUS[kind] and gives up its claim). Audited on the case; `run_paused`
    is sent once the transaction commits."""
    now = timezone.now()
    ttl = settings.AGENT_APPROVAL_TTL_SECONDS if ttl_seconds is None and kind == RunPause.Kind.APPROVAL \
        else ttl_seconds
    case = run.case
    pause = RunPause.objects.create(
        run=run, case=case, case_type=getattr(case, "case_type", "") or "", kind=kind, call_key=call_key,
        step=step[:80], agent=agent[:80], tool=tool[:80], arguments=arguments or {}, reason=reason[:4000],
        policy=policy[:200], snapshot=snapshot or {}, expires_at=now + timedelta(seconds=ttl) if ttl else None)
    audit_record(actor=f"agent:{agent}" if agent else "system", action=f"agent.{kind}_requested", case=case,
                 obj=pause, data={"run": run.pk, "call": call_key, "step": step, "tool": tool,
                                  # The values and the agent's reason stay on the pause, encrypted
                                  # at rest (agents.models); the trail names the arguments.
                                  "arguments": argument_names(arguments), "policy": policy,
                                  "expires_at": pause.expires_at.isoformat() if pause.expires_at else None})
    transaction.on_commit(lambda: run_paused.send(sender=RunPause, pause=pause))
    return pause


def pauses_answered(run: AgentRun) -> dict[str, dict]:
    """The answered, not yet used pauses of the run, by call key: what each resumes from. A
    budget pause holds every call of its step that the budget refused (snapshot {"calls":
    {key: the call's own snapshot, or {} for a call made afresh}}): each is listed under its key."""
    answered = {}
    for pause in RunPause.objects.filter(run=run, resumed_at__isnull=True,
                                         status__in=[RunPause.Status.APPROVED, RunPause.Status.DENIED]):
        if pause.kind == RunPause.Kind.BUDGET:
            for key, snapshot in (pause.snapshot.get("calls") or {}).items():
                answered[key] = {"pause": pause.pk, "kind": pause.kind, "snapshot": snapshot,
                                 "answer": {"approved": True, "by": pause.decided_by, "arguments": None,
                                            "reason": pause.answer}}
            continue
        answered[pause.call_key] = {
            "pause": pause.pk, "kind": pause.kind, "snapshot": pause.snapshot,
            "answer": {"approved": pause.status == RunPause.Status.APPROVED, "pause": pause.pk, "by": pause.decided_by,
                       "arguments": pause.approved_arguments, "reason": pause.answer}}
    return answered


def pauses_mark_resumed(run: AgentRun, keys: list[str], *, step_done: bool = False) -> None:
    """In the transaction that saves the resumed step (`keys`: its calls that ended, or wait
    again under a new pause): their answers are used, never again. A released budget pause is
    used once every call it held is among them, or its step is done."""
    if not keys and not step_done:
        return
    now, ended = timezone.now(), set(keys)
    answered = RunPause.objects.filter(run=run, resumed_at__isnull=True).exclude(status=RunPause.Status.PENDING)
    answered.filter(kind=RunPause.Kind.APPROVAL, call_key__in=keys).update(resumed_at=now)
    used = [pause.pk for pause in answered.filter(kind=RunPause.Kind.BUDGET).only("pk", "snapshot")
            if step_done or set((pause.snapshot or {}).get("calls") or {}) <= ended]
    if used:
        RunPause.objects.filter(pk__in=used).update(resumed_at=now)


# --- People's side --------------------------------------------------------------------------

def arguments_validate(tool: Tool | None, arguments: dict) -> dict:
    """Edited arguments checked against the waiting tool's schema (`tool`: the pipeline's tool of
    that name, agents.runtime.pipeline.tool_find); InvalidArguments names the field."""
    if tool is None:
        raise InvalidArguments("arguments", "The tool is no longer registered: its arguments cannot be checked.")
    if not isinstance(arguments, dict):
        raise InvalidArguments("arguments", "Arguments are a JSON object.")
    try:
        return tool.parameters.model_validate(arguments).model_dump(mode="json")
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(map(str, first["loc"])) or "arguments"
        raise InvalidArguments(field, f"{field}: {first['msg']}") from None


def _actor_name(actor) -> str:
    return actor if isinstance(actor, str) else actor.get_username()


def _claim(pause: RunPause, status: str, actor, **fields) -> RunPause:
    """Move a pending pause to `status`, once: a second answer (or an answer to an expired
    pause) finds nothing pending and raises NotPending."""
    now = timezone.now()
    moved = RunPause.objects.filter(pk=pause.pk, status=RunPause.Status.PENDING).update(
        status=status, decided_by=_actor_name(actor)[:150], decided_at=now, **fields)
    if moved != 1:
        raise NotPending(f"This {pause.kind} was answered already ({RunPause.objects.get(pk=pause.pk).status}).")
    pause.refresh_from_db()
    return pause


@transaction.atomic
def pause_answer(*, pause: RunPause, actor, approve: bool, arguments: dict | None = None,
                 reason: str = "", tool: Tool | None = None) -> RunPause:
    """A person approves (with the arguments as given, or edited: checked against `tool`'s
    schema) or denies (with a reason) a waiting approval. The run resumes once none of its
    calls waits any more."""
    if approve:
        approved = arguments_validate(tool, arguments) if arguments is not None else pause.arguments
        pause = _claim(pause, RunPause.Status.APPROVED, actor, approved_arguments=approved, answer=reason[:2000])
    else:
        if not reason.strip():
            raise InvalidArguments("reason", "A denial says why: the agent reads it.")
        pause = _claim(pause, RunPause.Status.DENIED, actor, answer=reason.strip()[:2000])
    audit_record(actor=actor, action=f"agent.approval_{pause.status}", case=pause.case, obj=pause,
                 data={"run": pause.run_id, "tool": pause.tool, "arguments": argument_names(pause.arguments),
                       "approved_arguments": argument_names(pause.approved_arguments),
                       "edited": bool(approve and pause.approved_arguments != pause.arguments),
                       "reason": pause.answer})
    _resume_if_ready(pause, actor)
    return pause


@transaction.atomic
def pause_release(*, pause: RunPause, actor, answer: str = "") -> RunPause:
    """A non-approval pause let go (a lead raised the budget): the waiting call is made afresh."""
    pause = _claim(pause, RunPause.Status.APPROVED, actor, answer=answer[:2000])
    audit_record(actor=actor, action=f"agent.{pause.kind}_released", case=pause.case, obj=pause,
                 data={"run": pause.run_id, "answer": answer})
    _resume_if_ready(pause, actor)
    return pause


def _resume_if_ready(pause: RunPause, actor) -> None:
    run = pause.run
    if RunPause.objects.filter(run=run, status=RunPause.Status.PENDING).exists():
        return  # another call of the same step still waits
    now = timezone.now()
    run.refresh_from_db()
    if run.status not in WAITING_STATUSES:
        return
    # The wait is not working time: the run's deadline moves by it.
    started = (run.started_at or now) + (now - pause.created_at)
    moved = AgentRun.objects.filter(pk=run.pk, status=run.status).update(
        status=AgentRun.Status.QUEUED, started_at=started, heartbeat_at=now, not_before=None, redelivered_at=None)
    if moved != 1:
        return
    audit_record(actor=actor, action="agent.run_resumed", case=run.case, obj=run,
                 data={"pipeline": run.pipeline, "mode": run.mode, "after": pause.kind, "pause": pause.pk})

    # The run's wake-up is sent by run_resumed's receiver (agents.signals: agents.tasks is above here).
    transaction.on_commit(lambda: run_resumed.send(sender=RunPause, pause=pause))


@transaction.atomic
def pause_stop(*, pause: RunPause, actor, status: str, run_status: str, reason: str) -> RunPause:
    """End the run at this pause: the pause moves to `status` (expired, cancelled), the run to
    `run_status` with `reason` as its error, its partial spend counted. Audited."""
    pause = _claim(pause, status, actor, answer=reason[:2000])
    run = AgentRun.objects.select_related("case").get(pk=pause.run_id)
    spent = pause.snapshot.get("spent", {}) if isinstance(pause.snapshot, dict) else {}
    now = timezone.now()
    RunPause.objects.filter(run=run, status=RunPause.Status.PENDING).update(
        status=RunPause.Status.CANCELLED, decided_at=now, decided_by=_actor_name(actor)[:150], answer=reason[:2000])
    moved = AgentRun.objects.filter(pk=run.pk, status__in=WAITING_STATUSES).update(
        status=run_status, finished_at=now, error=reason[:1000], claim_token="",
        input_tokens=run.input_tokens + int(spent.get("input_tokens", 0)),
        output_tokens=run.output_tokens + int(spent.get("output_tokens", 0)))
    audit_record(actor=actor, action=f"agent.{pause.kind}_{status}", case=pause.case, obj=pause,
                 data={"run": run.pk, "tool": pause.tool, "reason": reason})
    if moved == 1:
        run.refresh_from_db()
        audit_record(actor=actor, action=f"agent.run_{run_status}", case=run.case, obj=run,
                     data={"pipeline": run.pipeline, "mode": run.mode, "error": reason, "steps": run.step_count})
    return pause


def _span(pause: RunPause) -> str:
    seconds = int((pause.expires_at - pause.created_at).total_seconds()) if pause.expires_at else 0
    return f"{seconds // 3600} h" if seconds >= 7200 else f"{max(seconds // 60, 1)} min"


def pauses_expire(*, now: datetime) -> int:
    """Every pending approval past its expires_at (as of `now`, the clock's unless a test gives
    one) expires, and its run ends "Approval expired". Returns how many expired."""
    expired = 0
    due = list(RunPause.objects.filter(status=RunPause.Status.PENDING, kind=RunPause.Kind.APPROVAL,
                                       expires_at__lte=now).order_by("expires_at", "pk")[:500])
    for pause in due:
        try:
            pause_stop(pause=pause, actor="system", status=RunPause.Status.EXPIRED,
                       run_status=AgentRun.Status.APPROVAL_EXPIRED,
                       reason=f"Nobody answered the approval of {pause.tool} within {_span(pause)}; "
                              "the call was not made.")
            expired += 1
        except NotPending:  # answered meanwhile
            continue
    return expired
