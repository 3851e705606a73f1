"""Fault injection for evaluation scenarios: an LLM call or a tool call that fails on purpose.

How it stays out of production: nothing in the runtime checks for faults. For the duration
of one scenario (`inject(faults)`, a context manager used only by the evaluation runner):
  - the process's provider (agents.llm.registry) is swapped for a `FaultyProvider` that
    wraps it, answering the named agents' calls with a provider error, a timeout or a
    malformed text, and passing every other call through;
  - ToolRegistry.execute / aexecute are swapped for wrappers that answer the named tools'
    calls with a ToolExecution error or a ToolTimeout, or run the tool with a handler that
    answers garbage (malformed), through the tool's own output check;
  - the retry delays are shortened, so a timeout retried three times costs milliseconds, and
    the audit sequencer is off (an evaluation's audit entries are thrown away with its database).
Everything is put back when the scenario ends, even when it raises. The swap is process-wide,
so the runner runs one scenario at a time (it does).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from django.test import override_settings

from agents.evals.schema import Fault
from agents.llm import errors
from agents.llm import registry as llm_registry
from agents.llm.base import Capabilities, Completion, LLMRequest, Provider
from agents.runtime import tools as tools_module

MALFORMED_TEXT = "Sure! Here is my assessment: severity is probably fine {not json"
MALFORMED_TOOL_RESULT = {"unexpected": "<<garbage from an evaluation fault>>"}


class FaultPlan:
    """Which calls fail, counted per (target, name); thread-safe (calls run concurrently)."""

    def __init__(self, faults: list[Fault]):
        self._faults = {(f.target, f.name): f for f in faults}
        self._used: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self.fired: list[dict] = []

    def take(self, target: str, name: str) -> Fault | None:
        fault = self._faults.get((target, name))
        if fault is None:
            return None
        with self._lock:
            used = self._used.get((target, name), 0)
            if fault.times is not None and used >= fault.times:
                return None
            self._used[(target, name)] = used + 1
            self.fired.append({"target": target, "name": name, "kind": fault.kind})
        return fault


class FaultyProvider(Provider):
    """The real provider, except for the calls the plan says fail."""

    def __init__(self, inner: Provider, plan: FaultPlan):
        self.inner, self.plan = inner, plan
        self.name, self.model = inner.name, inner.model

    def capabilities(self) -> Capabilities:
        return self.inner.capabilities()

    def complete(self, request: LLMRequest) -> Completion:
        fault = self.plan.take("llm", request.agent_id)
        return _llm_fault(fault, request) if fault else self.inner.complete(request)

    async def acomplete(self, request: LLMRequest) -> Completion:
        fault = self.plan.take("llm", request.agent_id)
        return _llm_fault(fault, request) if fault else await self.inner.acomplete(request)


def _llm_fault(fault: Fault, request: LLMRequest) -> Completion:
    if fault.kind == "error":
        # A 400-class provider error: not retried, like a refused request.
        raise errors.ProviderError(f"Injected provider error for {request.agent_id} (evaluation fault).",
                                   status_code=400)
    if fault.kind == "timeout":
        raise errors.TimeoutError(f"Injected timeout for {request.agent_id} (evaluation fault).")
    return Completion(text=MALFORMED_TEXT, model=getattr(request, "model", "") or "fault", finish_reason="stop")


def _tool_fault(fault: Fault, call) -> tools_module.ToolResult:
    started = time.perf_counter()
    if fault.kind == "error":
        return tools_module._result(call, started, False, f"{call.name} failed: RuntimeError: injected tool error "
                                    "(evaluation fault)", "ToolExecution")
    return tools_module._result(call, started, False, f"{call.name} did not finish within its timeout "
                                "(evaluation fault).", "ToolTimeout")


def _garbage_registry(registry, name: str):
    """The registry with the named tool's handler answering garbage: the real execution path
    runs on it, so the tool's own checks (its declared output) see what a broken source
    would send. A fault that skipped them tested nothing a real failure would do."""
    import dataclasses

    tools = [dataclasses.replace(t, handler=lambda _args: dict(MALFORMED_TOOL_RESULT)) if t.name == name else t
             for t in registry.get_tools()]
    return tools_module.ToolRegistry(tools)


@contextlib.contextmanager
def inject(faults: list[Fault]) -> Iterator[FaultPlan]:
    plan = FaultPlan(faults)
    registry_cls = tools_module.ToolRegistry
    original_execute, original_aexecute = registry_cls.execute, registry_cls.aexecute
    original_provider = llm_registry._provider

    def execute(self, call):
        fault = plan.take("tool", call.name)
        if fault is not None and fault.kind == "malformed":
            return original_execute(_garbage_registry(self, call.name), call)
        return _tool_fault(fault, call) if fault else original_execute(self, call)

    async def aexecute(self, call):
        fault = plan.take("tool", call.name)
        if fault is not None and fault.kind == "malformed":
            return await original_aexecute(_garbage_registry(self, call.name), call)
        return _tool_fault(fault, call) if fault else await original_aexecute(self, call)

    # Audit entries of an evaluation are thrown away with its database: no sequencing passes.
    with override_settings(LLM_RETRY_INITIAL_DELAY=0.001, LLM_RETRY_MAX_DELAY=0.01, AUDIT_SEQUENCER="off"):
        if faults:
            llm_registry._provider = FaultyProvider(llm_registry.get_provider(), plan)
            registry_cls.execute, registry_cls.aexecute = execute, aexecute
        try:
            yield plan
        finally:
            if faults:
                registry_cls.execute, registry_cls.aexecute = original_execute, original_aexecute
                llm_registry._provider = original_provider
