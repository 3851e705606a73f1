"""The seed's metrics (section 12), named exactly as there, and its spans."""

from __future__ import annotations

import time

from prometheus_client import Counter, Histogram

from audit.tracing import get_tracer

PLANNER_DECISIONS = Counter("ops_agent_planner_decisions", "Planner decisions by tool chosen and fallback use.",
                            ["selected_tool", "used_fallback"])
TOOL_LATENCY = Histogram("ops_agent_tool_execution_latency_seconds", "Investigation tool execution time.",
                         ["tool_name", "status"], buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
INVESTIGATION_STEPS = Histogram("ops_agent_investigation_steps", "Planner steps per finished investigation.",
                                buckets=tuple(range(1, 21)))
INVESTIGATIONS_COMPLETED = Counter("ops_agent_investigation_completed", "Investigations finished.",
                                   ["status", "severity"])


def _span(name: str, latency_ms: int, attributes: dict, error: str = "") -> None:
    """A span for work that already happened (the runtime ran it on its event loop): it
    starts latency_ms ago and ends now, under the run's span."""
    from opentelemetry import trace as otel_trace

    end = time.time_ns()
    span = get_tracer().start_span(name, start_time=end - latency_ms * 1_000_000)
    span.set_attributes(attributes)
    if error:
        span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, error[:200]))
    span.end(end_time=end)


def planner_span(*, investigation_id: str, step_count: int, selected_tool: str, used_fallback: bool,
                 latency_ms: int, confidence: float) -> None:
    _span("agent.planner", latency_ms, {"investigation_id": investigation_id, "step_count": step_count,
                                        "selected_tool": selected_tool, "used_fallback": used_fallback,
                                        "confidence": confidence})
    PLANNER_DECISIONS.labels(selected_tool, str(used_fallback).lower()).inc()


def tool_span(*, investigation_id: str, tool_name: str, status: str, execution_time_ms: int, error: str) -> None:
    _span(f"agent.tool.{tool_name}", execution_time_ms,
          {"investigation_id": investigation_id, "execution_time_ms": execution_time_ms, "tool.status": status},
          error)
    TOOL_LATENCY.labels(tool_name, status).observe(execution_time_ms / 1000)
