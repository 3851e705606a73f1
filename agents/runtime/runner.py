"""Running one agent: a single structured call, or a tool-calling loop.

Neither raises for an agent's failure: the result carries the error and its type, so a
pipeline can record it and go on. Every provider request goes through the retry policy,
the process-wide concurrency limit (LLM_MAX_CONCURRENCY) and an OpenTelemetry span.

Both are coroutines run on the process's event loop (agents.runtime.aio), so one worker
keeps many requests in flight; `run_agent` and `run_tool_loop` are their synchronous
entry points for code that is not on the loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from opentelemetry import trace as otel_trace

from agents import metrics
from agents.llm import errors
from agents.llm.base import Completion, LLMRequest, Message, Provider, ResponseSchema, StreamSink, ToolCall
from agents.llm.breaker import Breaker, breaker_for
from agents.llm.registry import get_provider
from agents.runtime import aio, charging, semconv
from agents.runtime.agent import Agent, AgentResult
from agents.runtime.approval import Decision
from agents.runtime.context import manage_context
from agents.runtime.effects import approval_effect_base, effect_scope
from agents.runtime.prompting import fence_data, system_prompt_for
from agents.runtime.retry import Attempt, RetryPolicy, acall_with_retry
from agents.runtime.structured import OutputError, parse_output, repair_prompt
from agents.runtime.tools import Tool, ToolRegistry, ToolResult
from audit.tracing import get_tracer

logger = logging.getLogger(__name__)


@dataclass
class _Call:
    """Book-keeping shared by the single call and the tool loop."""

    agent: Agent
    provider: Provider
    policy: RetryPolicy
    result: AgentResult
    input_data: dict | None = None
    metadata: dict = field(default_factory=dict)
    requests: int = 0
    # Shows the answer as it arrives: begin() before each request, delta(text) per piece, tool(name).
    stream: StreamSink | None = None

    async def complete(self, messages: list[Message], *, tools=None, schema: bool = True) -> Completion:
        agent, provider, result = self.agent, self.provider, self.result
        request = LLMRequest(
            messages=messages, tools=tools or [],
            response_schema=ResponseSchema(agent.id, agent.output_schema()) if schema else None,
            temperature=agent.temperature, max_tokens=agent.max_tokens, timeout=agent.timeout or settings.LLM_TIMEOUT_SECONDS,
            agent_id=agent.id, input_data=self.input_data, metadata=self.metadata,
            on_delta=self.stream.delta if self.stream is not None else None,
        )
        tracer = get_tracer()
        # The offline provider has no endpoint to be down.
        breaker = breaker_for(provider.name) if provider.name != "offline" and Breaker.enabled() else None

        async def attempt_once() -> Completion:
            # An open breaker fails the request at once, unsent and not retried (CircuitOpen).
            seen = breaker.before_request() if breaker is not None else None
            async with aio.llm_slots():
                with tracer.start_as_current_span("llm.request") as span:
                    span.set_attributes(semconv.llm_request_attributes(
                        provider=provider.name, model=provider.model or "", agent_id=agent.id,
                        temperature=agent.temperature, max_tokens=agent.max_tokens,
                        message_count=len(messages), tool_count=len(request.tools),
                        run_id=self.metadata.get("run")))
                    started = time.perf_counter()
                    if self.stream is not None:
                        self.stream.begin()  # a retry's answer starts afresh
                    try:
                        completion = await provider.acomplete(request)
                    except errors.LLMError as exc:
                        span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, exc.kind))
                        span.set_attribute("error.type", exc.kind)
                        metrics.LLM_ERRORS.labels(provider.name, exc.kind).inc()
                        if breaker is not None:
                            breaker.after_failure(exc)
                        raise
                    finally:
                        metrics.labelled(metrics.LLM_DURATION, provider.name, provider.model or "", agent.id).observe(
                            time.perf_counter() - started)
                        if settings.AGENT_CALL_DELAY_SECONDS > 0:
                            await asyncio.sleep(settings.AGENT_CALL_DELAY_SECONDS)
                    if breaker is not None:
                        breaker.after_success(seen)
                    span.set_attributes(semconv.llm_response_attributes(
                        input_tokens=completion.input_tokens, output_tokens=completion.output_tokens,
                        response_model=completion.model, finish_reason=completion.finish_reason,
                        context_tokens=provider.capabilities().context_tokens))
                    return completion

        self.requests += 1
        request_number = self.requests

        def on_attempt(attempt: Attempt) -> None:
            result.attempt_log.append(attempt.as_dict() | {"request": request_number})
            if not attempt.error_type:
                return
            # The log line carries the run's (or request's) correlation id and trace id (audit.logs).
            fields = {"agent": agent.id, "provider": provider.name, "attempt": attempt.number,
                      "error_type": attempt.error_type, "error": attempt.error[:300]}
            if attempt.backoff_s:
                metrics.LLM_RETRIES.labels(provider.name, attempt.error_type).inc()
                with tracer.start_as_current_span("llm.retry") as span:
                    span.set_attributes({"retry.attempt": attempt.number, "retry.backoff_s": attempt.backoff_s,
                                         "error.type": attempt.error_type})
                    logger.warning("LLM request of %s failed (%s), attempt %d; retrying in %.2f s: %s", agent.id,
                                   attempt.error_type, attempt.number, attempt.backoff_s, attempt.error[:300],
                                   extra={"event": "llm.retry", "backoff_s": attempt.backoff_s, **fields})
            else:
                logger.warning("LLM request of %s failed (%s) after %d attempt(s), not retried: %s", agent.id,
                               attempt.error_type, attempt.number, attempt.error[:300],
                               extra={"event": "llm.failed", **fields})

        # Charged to the case before it is sent (a reservation of its estimate; BudgetReached
        # refuses it unsent and unretried), settled with the real usage after (agents.runtime.charging).
        reservation = await charging.areserve(self.metadata.get("case"), provider, request)
        try:
            completion = await acall_with_retry(attempt_once, self.policy, on_attempt=on_attempt)
        except BaseException:
            charging.release_soon(reservation)
            raise
        await charging.asettle(reservation, provider, completion)
        result.input_tokens += completion.input_tokens
        result.output_tokens += completion.output_tokens
        result.model = completion.model
        cost = metrics.estimate_cost(completion.model, completion.input_tokens, completion.output_tokens, provider.name)
        result.cost_usd += cost
        metrics.labelled(metrics.LLM_TOKENS, provider.name, completion.model, "input").inc(completion.input_tokens)
        metrics.labelled(metrics.LLM_TOKENS, provider.name, completion.model, "output").inc(completion.output_tokens)
        metrics.labelled(metrics.LLM_COST, provider.name, completion.model).inc(cost)
        context = provider.capabilities().context_tokens
        if context:
            metrics.labelled(metrics.CONTEXT_UTILISATION, agent.id).observe(min(1.0, completion.input_tokens / context))
        return completion


def _start(agent: Agent, input_data: dict, provider: Provider | None, policy: RetryPolicy | None,
           metadata: dict | None):
    provider = provider or get_provider()
    result = AgentResult(agent_id=agent.id, provider=provider.name)
    policy = policy or RetryPolicy.from_settings()
    if agent.max_retries is not None:
        policy = dataclasses.replace(policy, max_retries=agent.max_retries)
    call = _Call(agent=agent, provider=provider, policy=policy, result=result,
                 input_data=input_data, metadata={"agent": agent.id, **(metadata or {})})
    messages = [
        Message(role="system", content=_system_prompt(agent)),
        Message(role="user", content=fence_data(input_data, label=agent.id)),
    ]
    return call, result, messages


@functools.cache
def _system_prompt(agent: Agent) -> str:
    # The same for every call of an agent; building it serialises the output schema.
    return system_prompt_for(agent.system_prompt, None if agent.final_tool else agent.output_schema())


def _fail(result: AgentResult, exc: errors.LLMError) -> AgentResult:
    result.output = None
    result.error = errors.user_message(exc)
    result.error_type = exc.kind
    return result


def _finish(result: AgentResult, span, started: float) -> AgentResult:
    result.latency_ms = int((time.perf_counter() - started) * 1000)
    result.attempts = len(result.attempt_log) or 1
    ctx = span.get_span_context()
    result.trace_id, result.span_id = format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")
    span.set_attributes({"agent.ok": result.ok, "agent.attempts": result.attempts,
                         "llm.tokens.input": result.input_tokens, "llm.tokens.output": result.output_tokens})
    if result.error:
        span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, result.error_type))
    return result


async def _parse_with_repair(call: _Call, messages: list[Message], completion: Completion) -> None:
    """Validate the answer; on failure ask once more, quoting the error; then give up."""
    agent, result = call.agent, call.result
    try:
        result.output = parse_output(completion.text, agent.output_model)
        return
    except OutputError as first:
        metrics.AGENT_OUTPUT_INVALID.labels(agent.id, "attempted").inc()
        retry_messages = messages + [Message(role="assistant", content=completion.text),
                                     Message(role="user", content=repair_prompt(first, agent.output_model))]
        second = await call.complete(retry_messages)
        try:
            result.output = parse_output(second.text, agent.output_model)
        except OutputError as exc:
            metrics.AGENT_OUTPUT_INVALID.labels(agent.id, "failed").inc()
            result.output = None
            result.error = f"{agent.id} returned output that does not fit its schema, even after one repair: {exc}"
            result.error_type = "invalid_output"


def run_agent(agent: Agent, input_data: dict, *, provider: Provider | None = None,
              policy: RetryPolicy | None = None, metadata: dict | None = None) -> AgentResult:
    """One agent, one structured answer (seed 000, section 3.1), never raising."""
    return aio.run(arun_agent(agent, input_data, provider=provider, policy=policy, metadata=metadata))


def run_tool_loop(agent: Agent, input_data: dict, **kwargs) -> AgentResult:
    """The tool-calling loop from synchronous code; see arun_tool_loop."""
    return aio.run(arun_tool_loop(agent, input_data, **kwargs))


async def arun_agent(agent: Agent, input_data: dict, *, provider: Provider | None = None,
                     policy: RetryPolicy | None = None, metadata: dict | None = None) -> AgentResult:
    if agent.tools:
        return await arun_tool_loop(agent, input_data, provider=provider, policy=policy, metadata=metadata)
    call, result, messages = _start(agent, input_data, provider, policy, metadata)
    started = time.perf_counter()
    with get_tracer().start_as_current_span(f"agent.{agent.id}") as span:
        span.set_attributes(semconv.agent_attributes(agent_id=agent.id, provider=call.provider.name,
                                                     run_id=call.metadata.get("run")))
        try:
            completion = await call.complete(messages)
            await _parse_with_repair(call, messages, completion)
        except errors.LLMError as exc:
            _fail(result, exc)
        return _finish(result, span, started)


async def arun_tool_loop(agent: Agent, input_data: dict, *, provider: Provider | None = None,
                         policy: RetryPolicy | None = None, max_turns: int = 8, max_tool_calls: int = 16,
                         context_strategy: str = "truncate", metadata: dict | None = None,
                         history: list[Message] | None = None, stream: StreamSink | None = None,
                         gate: Gate | None = None, resume: dict | None = None) -> AgentResult:
    """Call, run the tools asked for, return their results, call again (seed 004, section 5).

    Ends with the model's final JSON answer, or with the agent's final tool (whose validated
    arguments are the output), or with an error once max_turns or max_tool_calls is reached.
    `history` (a conversation's earlier turns and its new question) follows the fenced input;
    the context manager keeps the system prompt and the input and prunes the history first.
    `stream` receives each request's answer as it arrives, from providers that stream.

    `gate(tool, arguments)` says whether a call needs a person's approval first
    (agents.runtime.approval). When it does, the loop stops before that call and returns a
    result whose `pending` holds the tool, its arguments, the agent's reason and a snapshot
    of the loop (its conversation, the calls still to make, what it spent); nothing waits.
    `resume` ({"snapshot": ..., "answer": ...}, agents.runtime.pause) continues such a loop
    from its snapshot: the waiting call runs with the approved arguments, or its denial is
    the tool result the model reads, and the loop goes on.
    """
    call, result, messages = _start(agent, input_data, provider, policy, metadata)
    call.stream = stream
    messages += history or []
    registry = ToolRegistry(agent.tools)
    tools = {tool.name: tool for tool in agent.tools}
    tracer = get_tracer()
    started = time.perf_counter()
    first_turn, waiting_calls, answer, turn_start = 1, [], None, None
    if resume is not None:
        from agents.runtime.pause import snapshot_restore

        messages, first_turn, waiting_calls = snapshot_restore(resume["snapshot"], result)
        answer = resume.get("answer")
    with tracer.start_as_current_span(f"agent.{agent.id}") as span:
        span.set_attributes(semconv.agent_attributes(agent_id=agent.id, provider=call.provider.name,
                                                     run_id=call.metadata.get("run")))
        span.set_attribute("agent.tool_loop", True)
        try:
            if waiting_calls:
                stop = await _tool_calls_run(agent, registry, tools, waiting_calls, first_turn, messages, result,
                                             max_tool_calls, stream, gate, answer)
                if stop:
                    return _finish(result, span, started)
            if resume is not None:
                first_turn += 1
            for turn in range(first_turn, max_turns + 1):
                turn_start = (turn, list(messages))  # where a refusal by the case's budget resumes from
                messages, events = await _manage_context(call, messages, context_strategy)
                result.context_events += [e.as_dict() | {"turn": turn} for e in events]
                completion = await call.complete(messages, tools=registry.specs(), schema=False)
                if not completion.tool_calls:
                    if agent.final_tool:
                        messages.append(Message(role="assistant", content=completion.text))
                        messages.append(Message(role="user", content=f"Finish by calling {agent.final_tool}."))
                        continue
                    await _parse_with_repair(call, messages, completion)
                    return _finish(result, span, started)
                messages.append(Message(role="assistant", content=completion.text, tool_calls=completion.tool_calls))
                if await _tool_calls_run(agent, registry, tools, list(completion.tool_calls), turn, messages, result,
                                         max_tool_calls, stream, gate, None):
                    return _finish(result, span, started)
            result.error = f"{agent.id} stopped after {max_turns} turns without a final answer."
            result.error_type = "turn_cap"
        except errors.BudgetReached as exc:
            _fail(result, exc)
            if turn_start is not None:
                # The loop waits at this turn (a pipeline opens a budget pause with it): its tool
                # calls so far are not made again when it goes on.
                from agents.runtime.pause import snapshot_take

                result.pending = {"kind": "budget", "reason": result.error,
                                  "snapshot": snapshot_take(turn_start[1], turn_start[0] - 1, [], result)}
        except errors.LLMError as exc:
            _fail(result, exc)
        return _finish(result, span, started)


Gate = Callable[[Tool, dict], Decision]


async def _tool_calls_run(agent: Agent, registry: ToolRegistry, tools: dict[str, Tool], calls: list[ToolCall],
                          turn: int, messages: list[Message], result: AgentResult, max_tool_calls: int,
                          stream: StreamSink | None, gate: Gate | None, answer: dict | None) -> bool:
    """Run one turn's tool calls in order, appending each result to the conversation. True
    when the loop ends here: a cap reached, the final tool answered, or a call waiting for a
    person (`result.pending`). `answer` is a person's answer to the first call."""
    for index, tool_call in enumerate(calls):
        if len(result.tool_calls) >= max_tool_calls:
            result.error = f"{agent.id} stopped after {max_tool_calls} tool calls without finishing."
            result.error_type = "tool_call_cap"
            return True
        tool = tools.get(tool_call.name)
        if index == 0 and answer is not None:
            outcome = await _answered_tool(registry, tool_call, answer, turn, result, messages)
        else:
            decision = gate(tool, tool_call.arguments) if gate is not None and tool is not None \
                and not tool_call.raw_arguments else None
            if decision is not None and decision.needed:
                from agents.runtime.pause import snapshot_take

                result.pending = {
                    "kind": "approval", "tool": tool_call.name, "arguments": tool_call.arguments,
                    "tool_call_id": tool_call.id, "reason": _reason_of(messages), "rule": decision.rule,
                    "snapshot": snapshot_take(messages, turn, calls[index:], result)}
                return True
            if stream is not None:
                stream.tool(tool_call.name)
            outcome = await _execute_tool(registry, tool_call, turn, result)
        messages.append(Message(role="tool", content=outcome.as_message_content(),
                                tool_call_id=tool_call.id, name=tool_call.name))
        if outcome.success and tool_call.name == agent.final_tool:
            try:
                result.output = parse_output(json.dumps(tool_call.arguments), agent.output_model)
            except OutputError as exc:
                # The tool took these arguments but the output model does not: an agent's
                # error is a result, never an exception out of the pipeline.
                result.error = f"{agent.id} finished with {agent.final_tool} arguments that do not fit its output: {exc}"
                result.error_type = "invalid_output"
                return True
    return result.output is not None


def _reason_of(messages: list[Message]) -> str:
    """What the agent said with the call it asks for: the text of its last message."""
    last = messages[-1] if messages else None
    return (last.content or "").strip() if last is not None and last.role == "assistant" else ""


async def _answered_tool(registry: ToolRegistry, tool_call: ToolCall, answer: dict, turn: int,
                         result: AgentResult, messages: list[Message]) -> ToolResult:
    """The call a person answered: run with the arguments they approved (as edited), or, when
    denied, a tool result saying so (the model reads it like any other)."""
    if answer.get("approved"):
        arguments = answer.get("arguments") if answer.get("arguments") is not None else tool_call.arguments
        tool_call.arguments = arguments  # the conversation shows the call that ran
        # Its effects are keyed by the approval: made again after a worker's death, they are not
        # made twice (agents.runtime.effects).
        with effect_scope(approval_effect_base(answer)):
            return await _execute_tool(registry, tool_call, turn, result)
    outcome = ToolResult(tool_call.id, tool_call.name, False,
                         f"A person ({answer.get('by') or 'a reviewer'}) denied this call: "
                         f"{answer.get('reason') or 'no reason given'}. It was not run.", "ApprovalDenied", 0,
                         tool_call.arguments)
    result.tool_calls.append({"turn": turn, "id": tool_call.id, "name": tool_call.name,
                              "arguments": tool_call.arguments, "success": False, "error_type": outcome.error_type,
                              "result": outcome.content, "latency_ms": 0})
    return outcome


async def _manage_context(call: _Call, messages: list[Message], strategy: str):
    kwargs = {"context_tokens": call.provider.capabilities().context_tokens, "max_tokens": call.agent.max_tokens,
              "strategy": strategy}
    if strategy != "summarise":
        return manage_context(messages, **kwargs)
    # Summarising asks the model from inside manage_context's synchronous callback: run it on
    # a pool thread, whose callback waits for the summary request on the loop.
    return await aio.in_thread(lambda: manage_context(
        messages, summarise=lambda old: aio.run(_summarise(call, old)), **kwargs))


async def _execute_tool(registry: ToolRegistry, tool_call, turn: int, result: AgentResult):
    with get_tracer().start_as_current_span(f"tool.{tool_call.name}") as span:
        outcome = await registry.aexecute(tool_call)
        span.set_attributes(semconv.tool_attributes(tool_name=tool_call.name, call_id=tool_call.id,
                                                    success=outcome.success, duration_ms=outcome.latency_ms,
                                                    error_type=outcome.error_type))
        if not outcome.success:
            span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, outcome.error_type))
    metrics.TOOL_DURATION.labels(tool_call.name).observe(outcome.latency_ms / 1000)
    metrics.TOOL_CALLS.labels(tool_call.name, "ok" if outcome.success else outcome.error_type).inc()
    result.tool_calls.append({
        "turn": turn, "id": tool_call.id, "name": tool_call.name, "arguments": tool_call.arguments,
        "success": outcome.success, "error_type": outcome.error_type,
        "result": outcome.content if isinstance(outcome.content, dict | list | str | int | float) else str(outcome.content),
        "latency_ms": outcome.latency_ms,
    })
    return outcome


async def _summarise(call: _Call, old: list[Message]) -> str:
    text = "\n".join(f"{m.role}: {m.content[:2000]}" for m in old)
    summary_agent = Agent(id=f"{call.agent.id}.summary", system_prompt="Summarise the conversation so far "
                          "in at most 200 words, keeping every fact and tool result that matters.",
                          output_model=call.agent.output_model)
    sub = _Call(agent=summary_agent, provider=call.provider, policy=call.policy, result=call.result,
                input_data={"conversation": text}, metadata=call.metadata)
    completion = await sub.complete([Message(role="system", content=summary_agent.system_prompt),
                               Message(role="user", content=fence_data({"conversation": text}))], schema=False)
    text = completion.text or ""
    try:  # a JSON answer ({"summary": ...}, as the offline summariser gives) is unwrapped
        value = json.loads(text)
        if isinstance(value, dict) and isinstance(value.get("summary"), str):
            return value["summary"]
    except ValueError:
        pass
    return text or "Summary unavailable."
