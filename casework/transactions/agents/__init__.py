"""Transaction investigations (seed 003): the planner agent and its six tools.

    state.py     the investigation state, the planner's rules and fallback, scoring
    planner.py   the planner agent, its input and the offline rule-based planner
    tools.py     the six tools, run directly as steps
    findings.py  reasoning, recommendations and the rule draft (pure functions)
    telemetry.py the seed's four Prometheus metrics and its spans
"""

from __future__ import annotations

from casework.transactions.agents import planner  # noqa: F401  (registers the offline planner)
