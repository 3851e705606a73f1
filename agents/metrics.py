"""Prometheus metrics of the agent runtime (seed 004, section 6)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

LLM_DURATION = Histogram("casework_llm_call_duration_seconds", "Time for one provider.complete().",
                         ["provider", "model", "agent"], buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60))
LLM_TOKENS = Counter("casework_llm_tokens_total", "Tokens used, by direction.", ["provider", "model", "direction"])
LLM_ERRORS = Counter("casework_llm_errors_total", "LLM call errors by type.", ["provider", "error_type"])
LLM_RETRIES = Counter("casework_llm_retries_total", "LLM call retries.", ["provider", "error_type"])
LLM_COST = Counter("casework_llm_cost_usd_total", "Estimated LLM cost in US dollars.", ["provider", "model"])
TOOL_DURATION = Histogram("casework_tool_duration_seconds", "Tool execution time.", ["tool"])
TOOL_CALLS = Counter("casework_tool_calls_total", "Tool calls by outcome.", ["tool", "outcome"])
CONTEXT_UTILISATION = Histogram("casework_context_utilisation_ratio", "Share of the context window used.",
                                ["agent"], buckets=(0.1, 0.25, 0.5, 0.75, 0.9, 1.0))
AGENT_OUTPUT_INVALID = Counter("casework_agent_invalid_output_total", "Answers that failed their schema.",
                               ["agent", "repaired"])
# Wake-ups the sweeper (agents.tasks.resume_stale_runs) sent for runs whose broker message may
# be lost: reason "queued" (never picked up) or "stale_heartbeat" (the worker died). The age
# of the oldest queued run is a gauge read from the database at scrape time (casework.ops.metrics).
RUNS_REDELIVERED = Counter("casework_agent_runs_redelivered_total", "Runs re-delivered by the sweeper, by reason.",
                           ["reason"])

# Runs interrupted by a transient database error (a restart, a lost connection) and retried
# with backoff from their last saved step (agents.tasks.run_pipeline), never failed.
RUNS_INTERRUPTED = Counter("casework_agent_runs_interrupted_total",
                           "Run attempts interrupted by a transient database error and retried.")

# Times a provider's circuit breaker opened (agents/llm/breaker.py): its endpoint refused or
# dropped LLM_BREAKER_THRESHOLD connections in a row. /healthz says whether it is open now.
LLM_BREAKER_OPENED = Counter("casework_llm_breaker_opened_total", "LLM circuit breaker openings, by provider.",
                             ["provider"])


_children: dict[tuple, object] = {}


def labelled(metric, *values: str):
    """`metric.labels(*values)`, the child kept: labels() checks, converts and locks on every
    call, and each LLM call updates five labelled metrics (2% of a worker's CPU in
    bench/runtime_throughput.py). The child is the one labels() returns, so it is the same
    series; label values here are bounded (providers, models, agent ids)."""
    key = (metric, values)
    child = _children.get(key)
    if child is None:
        child = _children[key] = metric.labels(*values)
    return child


def estimate_cost(model: str, input_tokens: int, output_tokens: int, provider: str = "*") -> float:
    """What the call cost at the settings' price table (agents/llm/prices.py)."""
    from agents.llm.prices import call_cost

    return float(call_cost(provider, model, input_tokens, output_tokens))
