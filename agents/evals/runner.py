"""Running scenarios through the real services, pipelines and runtime, and reading back what
happened: the decision fields, the trajectory of agent and tool calls, the outputs' text.

One scenario:
  1. `reset()` empties the evaluation database (each scenario starts from nothing but its
     own reference data: the fraud agents' similar cases, say, never come from another
     scenario); the caller decides which database that is (agents.evals.isolation);
  2. with its faults injected (agents.evals.faults), the scenario's input goes through the
     case type's services (agents.evals.adapters); the runs they queue are not sent to a
     broker but executed here, in order, with the worker's own function (execute_run), until
     none is queued (a run may queue the next: support intake -> triage, access answers);
  3. the case's runs and their AgentCall rows (in id order: the trajectory) are read back.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

from agents.evals import adapters
from agents.evals.faults import inject
from agents.evals.schema import Scenario

MAX_DRAIN = 25


@dataclass
class Observed:
    """What a scenario's run produced."""

    case_reference: str = ""
    fields: dict = field(default_factory=dict)
    trajectory: list[dict] = field(default_factory=list)
    run_statuses: list[str] = field(default_factory=list)
    text: str = ""
    provider: str = ""
    model: str = ""
    faults_fired: list[dict] = field(default_factory=list)
    crash: str = ""
    seconds: float = 0.0
    # Each tool call as the model made it: name, arguments, status, what it answered (cut short).
    tool_calls: list[dict] = field(default_factory=list)
    # The groundedness check (agents.evals.grounding): {"checked": n, "invented": [...]}, or
    # None when the case type registers nothing to check.
    grounding: dict | None = None
    # Where to open the run: its traces (the waterfall), and what it cost.
    trace_ids: list[str] = field(default_factory=list)
    run_ids: list[int] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    # The agents' outputs by call key (for the page and a diff between two runs).
    outputs: dict = field(default_factory=dict)
    # "Ask the agent" turns: question, answer, tool calls, error; and whether the case changed.
    chat: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


@contextlib.contextmanager
def contained() -> Iterator[None]:
    """Nothing of a scenario leaves the process: queued runs wait for drain_runs instead of
    going to the broker (or running eagerly inside the commit that queued them); every other
    task (a notification's email) runs in place instead of reaching a real worker, which would
    look for rows of a database that is gone; email goes to memory. The managers a scenario
    creates never log in, so their passwords take the fast hasher (PBKDF2 costs ~0.3 s each)."""
    from django.test import override_settings

    from agents import tasks
    from casework.celery import app as celery_app

    original, eager = (tasks.run_pipeline.delay, tasks.run_pipeline.apply_async), celery_app.conf.task_always_eager
    tasks.run_pipeline.delay = tasks.run_pipeline.apply_async = lambda *args, **kwargs: None
    celery_app.conf.task_always_eager = True
    try:
        with override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
                               PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
            yield
    finally:
        tasks.run_pipeline.delay, tasks.run_pipeline.apply_async = original
        celery_app.conf.task_always_eager = eager


def drain_runs() -> int:
    """Execute queued runs, oldest first, until none is left; returns how many ran. A run
    scheduled for later (a retry after a backoff) is due at once: a scenario does not wait."""
    from agents.models import AgentRun
    from agents.runtime.pipeline import execute_run

    scheduled = any(f.name == "not_before" for f in AgentRun._meta.concrete_fields)
    done = 0
    for _ in range(MAX_DRAIN):
        run_id = (AgentRun.objects.filter(status=AgentRun.Status.QUEUED).order_by("id")
                  .values_list("pk", flat=True).first())
        if run_id is None:
            break
        if scheduled:
            AgentRun.objects.filter(pk=run_id).update(not_before=None)
        execute_run(run_id)
        done += 1
    return done


def run_scenario(case_type: str, scenario: Scenario, *, reset: Callable[[], None]) -> Observed:
    started = time.perf_counter()
    reset()
    observed = Observed()
    with contained(), inject(scenario.faults) as plan:
        try:
            adapters.submit(case_type, scenario)
            drain_runs()
            if scenario.chat:
                observed.chat = _ask(case_type, scenario.chat)
        except Exception as exc:  # noqa: BLE001 - a crash is a scenario's failure, reported with its reason
            observed.crash = f"{type(exc).__name__}: {exc}"[:500]
    observed.faults_fired = plan.fired
    _read_back(case_type, observed, scenario)
    observed.seconds = round(time.perf_counter() - started, 3)
    return observed


def _read_back(case_type: str, observed: Observed, scenario: Scenario) -> None:
    from agents.models import AgentCall, AgentRun
    from casework.cases.models import Case

    case = Case.objects.filter(case_type=case_type).order_by("-id").first()
    if case is None:
        return
    observed.case_reference = case.reference
    runs = list(AgentRun.objects.filter(case=case).order_by("id"))
    observed.run_statuses = [r.status for r in runs]
    calls = list(AgentCall.objects.filter(run__in=runs).order_by("id"))
    observed.trajectory = [{"kind": c.kind, "name": c.name, "key": c.key, "status": c.status,
                            "error_type": c.error_type} for c in calls]
    observed.tool_calls = [{"name": c.name, "arguments": c.input if isinstance(c.input, dict) else {},
                            "status": c.status, "answer": _short(c.output if c.status == "ok" else c.error)}
                           for c in calls if c.kind == AgentCall.Kind.TOOL]
    observed.run_ids = [r.pk for r in runs]
    observed.trace_ids = list(dict.fromkeys(c.trace_id for c in calls if c.trace_id))
    observed.input_tokens = sum(c.input_tokens for c in calls)
    observed.output_tokens = sum(c.output_tokens for c in calls)
    observed.cost_usd = round(float(sum(c.cost_usd for c in calls)), 6)
    fields: dict = {"case.status": case.status, "case.priority": case.priority}
    texts: list[str] = []
    for run in runs:
        fields["run.status"] = run.status
        observed.provider = run.provider or observed.provider
        for key, entry in run.results.items():
            if not isinstance(entry, dict):
                continue
            output = entry.get("output")
            if isinstance(output, dict):
                _flatten(key, output, fields)
                observed.outputs[key] = output
                texts.append(json.dumps(output, ensure_ascii=False, default=str))
            if entry.get("error"):
                texts.append(str(entry["error"]))
    observed.model = next((c.model for c in reversed(calls) if c.model), "")
    record = case.record
    if record is not None:
        for f in record._meta.concrete_fields:
            value = getattr(record, f.attname)
            if isinstance(value, str | int | float | bool) and not f.name.endswith("_id") and f.name != "id":
                fields[f"record.{f.name}"] = value
    fields.update(_extras(case_type, case))
    chat_texts: list[str] = []
    if observed.chat:
        before = observed.chat[0].get("case_before")
        fields["chat.case_unchanged"] = before == _case_state(case)
        for turn in observed.chat:
            chat_texts.append(turn["answer"])
            for call in turn["tool_calls"]:
                # Named chat.<tool>: a chat's calls are told apart from the pipeline's own.
                name = f"chat.{call['name']}"
                observed.trajectory.append({"kind": "chat", "name": name, "key": name, "status": call["status"],
                                            "error_type": ""})
                observed.tool_calls.append({**call, "name": name})
        observed.outputs["chat"] = [{"question": t["question"], "answer": t["answer"]} for t in observed.chat]
    observed.fields = fields
    observed.grounding = _grounding(case_type, case, scenario, calls, observed.chat)
    observed.text = "\n".join(texts + [str(v) for k, v in fields.items() if k.startswith("extra.")] + chat_texts)


def _flatten(prefix: str, value: dict, into: dict) -> None:
    for key, item in value.items():
        name = f"{prefix}.{key}"
        if isinstance(item, dict):
            _flatten(name, item, into)
        elif isinstance(item, str | int | float | bool) or item is None:
            into[name] = item


def _extras(case_type: str, case) -> dict:
    """Decision fields that live beside the record (the filed report, the rights check ...):
    what the case type's Evaluation.observed reads."""
    evaluation = adapters.evaluation_of(case_type)
    return evaluation.observed(case) if evaluation is not None and evaluation.observed is not None else {}


def _short(value, limit: int = 4000):
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= limit else text[:limit] + " ..."


def _grounding(case_type: str, case, scenario: Scenario, calls, chat: list[dict]) -> dict | None:
    """What the case's findings, replies and chat answers state, checked against the run's own
    data (a chat answer may also quote what its own tools returned and the case it was given)."""
    from agents.evals.grounding import check, sources_of
    from agents.evals.prompts import prompt_texts

    evaluation = adapters.evaluation_of(case_type)
    grounding = getattr(evaluation, "grounding", None)
    if grounding is None:
        return None
    statements = [s for s in grounding.statements(case) if s] + [t["answer"] for t in chat if t["answer"]]
    extra = [t["context"] for t in chat]
    sources = sources_of(scenario.input, scenario.reference, calls, prompt_texts(case_type)) + json.dumps(
        extra, ensure_ascii=False, default=str)
    return check(statements, sources, items=grounding.items, numbers=grounding.numbers).as_dict()


def _case_state(case) -> dict:
    """What a chat must not change: the case's status, priority, assignee and decisions."""
    from casework.cases.models import Case

    fresh = Case.objects.get(pk=case.pk)
    decisions = fresh.decisions.count() if hasattr(fresh, "decisions") else None
    return {"status": fresh.status, "priority": fresh.priority, "assignee": getattr(fresh, "assignee_id", None),
            "decisions": decisions}


def _ask(case_type: str, questions: list[str]) -> list[dict]:
    """Put the questions to the case's agent as an investigator would, one conversation."""
    from agents.chat.context import case_context
    from agents.chat.services import message_send
    from casework.cases.models import Case
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create

    case = Case.objects.filter(case_type=case_type).order_by("-id").first()
    if case is None:
        return []
    before = _case_state(case)
    asker = user_create(actor="system", username="evaluation-chat", password=secrets.token_urlsafe(16),
                        role=INVESTIGATOR)
    turns = []
    for question in questions:
        answer = message_send(actor=asker, case=case, content=question)
        turns.append({"question": question, "answer": answer.content, "error": answer.error,
                      "context": case_context(case), "case_before": before,
                      "tool_calls": [{"name": c.get("name", ""), "arguments": c.get("arguments") or {},
                                      "status": "ok" if c.get("success") else "error", "answer": None}
                                     for c in answer.tool_calls or []]})
    return turns
