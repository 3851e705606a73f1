"""Tools: a name, a description, JSON-schema parameters from a Pydantic model, a handler,
a timeout, and the consequence of running it. Executing one validates the arguments and
turns every failure into a result the model sees (ToolNotFound, InvalidArguments,
ToolExecution, ToolTimeout), never a crash.

Every tool declares its consequence (issue 46), and a tool cannot be built without one:
  read_only  reads Casework's or a source's data, changes nothing;
  drafts     writes a draft inside Casework (a report, a rule draft) that a person acts on;
  acts       talks to a person or a system outside Casework (an e-mail to an employee, a
             reply to a customer, a request to a bank system). Whether an "acts" call needs a
             person's approval first is the approval policy's (agents.runtime.approval).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from agents.llm.base import ToolCall, ToolSpec
from agents.runtime.prompting import fence_data
from agents.runtime.transient import is_transient

# Handlers that outlive their timeout keep running on this pool (a thread cannot be killed);
# their result is discarded.
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="tool")

READ_ONLY, DRAFTS, ACTS = "read_only", "drafts", "acts"
CONSEQUENCES = (READ_ONLY, DRAFTS, ACTS)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: type[BaseModel]
    handler: Callable[..., Any]
    timeout: float = 10.0
    # What the handler returns, when the tool declares it: a result of another shape (a source
    # that answered garbage) is a ToolExecution error the model reads, never data it trusts.
    output: type[BaseModel] | None = None
    # read_only, drafts or acts (see the module's docstring); nothing else is accepted.
    consequence: str = ""

    def __post_init__(self) -> None:
        if self.consequence not in CONSEQUENCES:
            raise ValueError(f"Tool {self.name!r} must declare its consequence, one of {', '.join(CONSEQUENCES)} "
                             f"(got {self.consequence!r}).")

    @property
    def acts(self) -> bool:
        return self.consequence == ACTS

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description,
                        parameters=self.parameters.model_json_schema())


@dataclass
class ToolResult:
    tool_call_id: str
    name: str
    success: bool
    content: Any
    error_type: str = ""
    latency_ms: int = 0
    arguments: dict = field(default_factory=dict)

    def as_message_content(self) -> str:
        """What the model reads back: the result, or {"error", "message"}, fenced and escaped
        like case data. A tool returns case data (a mutation's reason, a ticket's text), and an
        error may quote the arguments the model sent, which may quote case data in turn."""
        value = self.content if self.success else {"error": self.error_type, "message": self.content}
        return fence_data(value, label=f"tool-result:{self.name}")


class ToolRegistry:
    def __init__(self, tools: tuple[Tool, ...] | list[Tool] = ()):
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"A tool named {tool.name!r} is already registered.")
        self._tools[tool.name] = tool

    def get_tools(self) -> list[Tool]:
        return list(self._tools.values())

    def specs(self) -> list[ToolSpec]:
        return [t.spec() for t in self._tools.values()]

    def execute(self, call: ToolCall) -> ToolResult:
        """Run a tool call from synchronous code (the handler on a pool thread, with its timeout)."""
        started = time.perf_counter()
        tool, args, refused = self._prepare(call, started)
        if refused is not None:
            return refused
        future = _POOL.submit(_run_handler, tool.handler, args)
        try:
            value = future.result(timeout=tool.timeout)
        except concurrent.futures.TimeoutError:
            return _result(call, started, False, f"{tool.name} did not finish within {tool.timeout:g} s.",
                           "ToolTimeout")
        except Exception as exc:  # noqa: BLE001 - a failing tool is reported to the model
            if is_transient(exc):
                raise  # not the tool's failure: the run is retried from its last saved step
            return _result(call, started, False, f"{tool.name} failed: {type(exc).__name__}: {exc}",
                           "ToolExecution")
        return _checked(tool, call, started, value)

    async def aexecute(self, call: ToolCall) -> ToolResult:
        """The same from the runtime's event loop: the handler runs on a pool thread (it may
        use the database), the loop waits for it without blocking other requests."""
        started = time.perf_counter()
        tool, args, refused = self._prepare(call, started)
        if refused is not None:
            return refused
        context = contextvars.copy_context()
        future = _POOL.submit(context.run, _run_handler, tool.handler, args)
        try:
            value = await asyncio.wait_for(asyncio.wrap_future(future), timeout=tool.timeout)
        except TimeoutError as exc:
            if future.done() and not future.cancelled() and future.exception() is not None:
                # The handler itself raised TimeoutError (a socket's, say): a failure, not our timeout.
                return _result(call, started, False, f"{tool.name} failed: TimeoutError: {exc}", "ToolExecution")
            return _result(call, started, False, f"{tool.name} did not finish within {tool.timeout:g} s.",
                           "ToolTimeout")
        except Exception as exc:  # noqa: BLE001 - a failing tool is reported to the model
            if is_transient(exc):
                raise  # not the tool's failure: the run is retried from its last saved step
            return _result(call, started, False, f"{tool.name} failed: {type(exc).__name__}: {exc}",
                           "ToolExecution")
        return _checked(tool, call, started, value)

    def _prepare(self, call: ToolCall, started: float) -> tuple[Tool | None, BaseModel | None, ToolResult | None]:
        """The tool and its validated arguments, or the result that refuses the call."""
        tool = self._tools.get(call.name)
        if tool is None:
            return None, None, _result(call, started, False, f"No tool named {call.name!r}. Available: "
                                 f"{', '.join(self._tools) or 'none'}.", "ToolNotFound")
        if call.raw_arguments:
            return None, None, _result(call, started, False,
                                       f"Arguments are not valid JSON: {call.raw_arguments[:200]}", "InvalidArguments")
        try:
            args = tool.parameters.model_validate(call.arguments)
        except PydanticValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
            return None, None, _result(call, started, False, f"Invalid arguments for {tool.name}: {problems}",
                                       "InvalidArguments")
        return tool, args, None


def _checked(tool: Tool, call: ToolCall, started: float, value: Any) -> ToolResult:
    """The handler's value, validated against the tool's declared output when it has one."""
    if tool.output is not None and not isinstance(value, tool.output):
        try:
            value = tool.output.model_validate(value)
        except PydanticValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            return _result(call, started, False, f"{tool.name} failed: it answered data that is not its "
                           f"result ({problems})", "ToolExecution")
    return _result(call, started, True, value)


def _result(call: ToolCall, started: float, success: bool, content: Any, error_type: str = "") -> ToolResult:
    if success and isinstance(content, BaseModel):
        content = content.model_dump(mode="json")
    return ToolResult(call.id, call.name, success, content, error_type,
                      int((time.perf_counter() - started) * 1000), call.arguments)


def _run_handler(handler: Callable[..., Any], args: BaseModel) -> Any:
    from django.db import connection

    try:
        return handler(args)
    finally:
        # The handler ran on a pool thread: close the connection it may have opened there.
        connection.close()


def argument_names(arguments) -> list[str]:
    """What the audit trail keeps of a tool call's arguments: their names, never their values.
    The values quote the case (an absence's dates); they stay on the call's row or the pause,
    encrypted at rest (agents.models), which the entry names."""
    return sorted(arguments) if isinstance(arguments, dict) else []
