"""The investigation state (seed 003, section 2), the planner's rules and its fallback, and
the scoring that turns evidence into a severity and a confidence. Pure functions of the
state: no database, no LLM."""

from __future__ import annotations

from datetime import UTC, datetime

FALLBACK_SEQUENCE = (
    "context_tool",
    "pattern_tool",
    "similarity_tool",
    "reasoning_tool",
    "recommendation_tool",
    "rule_draft_tool",
)
TOOL_NAMES = frozenset(FALLBACK_SEQUENCE)
COMPLETE = "COMPLETE"
RECOMMENDATION_TOOL = "recommendation_tool"
# A transaction at these severities needs recommendations before its investigation completes.
REQUIRES_RECOMMENDATIONS = ("HIGH", "CRITICAL")
# Which state key each tool fills (the seed's "populated by" comments).
FILLS = {"context_tool": "context", "pattern_tool": "pattern_results", "similarity_tool": "similarity_results",
         "reasoning_tool": "reasoning", "recommendation_tool": "recommendations", "rule_draft_tool": "rule_draft"}


def utc_now() -> str:
    return datetime.now(UTC).isoformat()


def create_initial_state(*, investigation_id: int, transaction_id: str, max_steps: int, safeguards: dict,
                         feature_flags: dict) -> dict:
    """A fresh state with the seed's defaults; JSON-safe (strings, numbers, lists, dicts)."""
    return {
        "investigation_id": str(investigation_id), "transaction_id": transaction_id,
        "context": {}, "pattern_results": {}, "similarity_results": {}, "hypotheses": [], "evidence": [],
        "reasoning": {}, "recommendations": [], "rule_draft": None,
        "confidence_score": 0.0, "severity": "LOW",
        "status": "PENDING", "completed_steps": [], "next_action": "", "step_count": 0, "max_steps": max_steps,
        "started_at": utc_now(), "completed_at": None,
        "feature_flags": feature_flags, "safeguards": safeguards,
        "planner_decisions": [], "tool_executions": [], "error": None,
        # Where a rule in code overrode the planner (casework.transactions.progress.override_record).
        "overrides": [],
    }


def history_count(state: dict) -> int:
    return int(state.get("context", {}).get("history_count") or 0)


def context_failed(state: dict) -> bool:
    """context_tool ran and gave nothing: nothing else can be analysed (INCONCLUSIVE)."""
    return "context_tool" in state["completed_steps"] and not state["context"]


def needs_recommendations(state: dict) -> bool:
    """A HIGH or CRITICAL transaction whose recommendation_tool has not run yet."""
    return state.get("severity") in REQUIRES_RECOMMENDATIONS and RECOMMENDATION_TOOL not in state["completed_steps"]


def rule_violation(tool: str, state: dict) -> str | None:
    """Why the planner may not choose `tool` now (seed 4.3, every rule in code), or None.

    reasoning_tool needs pattern_tool and similarity_tool done (a failed tool counts as
    done), except that similarity is not required for a card with no history at all: there
    is nothing to compare, and the offline planner skips it. COMPLETE needs reasoning_tool
    done, and at HIGH or CRITICAL severity recommendation_tool too."""
    done = set(state["completed_steps"])
    if tool == COMPLETE:
        if context_failed(state):
            return None  # the context could not be loaded: nothing more can be learnt
        if "reasoning_tool" not in done:
            return "COMPLETE before reasoning_tool: the evidence has not been weighed yet"
        if needs_recommendations(state):
            return (f"COMPLETE before recommendation_tool at {state['severity']} severity: a high or critical "
                    "transaction needs recommendations")
        return None
    if tool not in TOOL_NAMES:
        return f"{tool!r} is not a registered tool"
    if tool in done:
        return f"{tool} already ran in this investigation"
    if not state["context"] and tool != "context_tool" and "context_tool" not in done:
        return "context_tool must run first while there is no context"
    if tool == "reasoning_tool":
        missing = [t for t in ("pattern_tool", "similarity_tool") if t not in done
                   and not (t == "similarity_tool" and state["context"] and history_count(state) == 0)]
        if missing:
            return f"reasoning_tool needs {' and '.join(missing)} first"
    if tool == "recommendation_tool" and "reasoning_tool" not in done:
        return "recommendation_tool needs reasoning_tool first"
    if tool == "rule_draft_tool" and "recommendation_tool" not in done:
        return "rule_draft_tool needs recommendation_tool first"
    return None


def deterministic_fallback(state: dict) -> str:
    """The first tool in the seed's order that is not yet done, else COMPLETE (seed 4.4)."""
    for tool in FALLBACK_SEQUENCE:
        if tool not in state["completed_steps"]:
            return tool
    return COMPLETE


# --- scoring --------------------------------------------------------------------------------

SEVERITY_THRESHOLDS = (("CRITICAL", 0.8), ("HIGH", 0.6), ("MEDIUM", 0.35))


def severity_for(score: float) -> str:
    return next((name for name, floor in SEVERITY_THRESHOLDS if score >= floor), "LOW")


def assess(state: dict) -> tuple[float, str, float]:
    """(risk score, severity, confidence) from the evidence so far.

    Risk: the pattern analysis's combined score; the share of similar past investigations
    decided fraud pulls it (weight up to 0.3, growing with the number of decided matches);
    the reasoning's strongest fraud hypothesis pulls it too (weight 0.3).
    Confidence: how much of the evidence there is (patterns 0.35, similarity 0.15, or 0.05
    with no match, reasoning 0.25, context 0.1) times how much the sources agree."""
    patterns = state.get("pattern_results") or {}
    similarity = state.get("similarity_results") or {}
    reasoning = state.get("reasoning") or {}
    risk = float(patterns.get("risk_score", 0.0))
    coverage = 0.1 if state.get("context") else 0.0
    sources = [risk] if patterns else []
    if patterns:
        coverage += 0.35
    decided = int(similarity.get("decided", 0))
    if similarity:
        coverage += 0.15 if similarity.get("matches") else 0.05
    if decided:
        weight = min(0.3, 0.1 * decided)
        share = float(similarity.get("fraud_share") or 0.0)
        risk = risk * (1 - weight) + share * weight
        sources.append(share)
    if reasoning:
        coverage += 0.25
        fraud_likelihood = float(reasoning.get("fraud_likelihood", risk))
        risk = risk * 0.7 + fraud_likelihood * 0.3
        sources.append(fraud_likelihood)
    agreement = 1.0 - (max(sources) - min(sources)) / 2 if len(sources) > 1 else 1.0
    confidence = round(min(1.0, coverage * agreement + (0.15 if coverage >= 0.85 else 0.0)), 3)
    return round(risk, 3), severity_for(risk), confidence


def findings_summary(state: dict) -> str:
    lines = []
    context = state.get("context") or {}
    if context:
        txn = context["transaction"]
        lines.append(f"- {txn['amount']} {txn['currency']} at {txn['merchant']} (MCC {txn['mcc']}, "
                     f"{txn['country']}, {txn['channel']}); {context['history_count']} earlier transactions "
                     f"in {context['history_days']} days.")
        related = context.get("related_cases") or {}
        if related.get("linked") or related.get("entities"):
            fraud = sum(1 for c in related.get("linked", []) if c.get("confirms_fraud"))
            lines.append(f"- {len(related.get('linked', []))} case(s) linked by a person ({fraud} decided fraud); "
                         f"{len(related.get('entities', []))} of its card, device, IP ... named in other cases.")
    for pattern in (state.get("pattern_results") or {}).get("patterns", []):
        if pattern["flagged"]:
            lines.append(f"- {pattern['type']} pattern flagged: {pattern['detail']}")
    similarity = state.get("similarity_results") or {}
    if similarity:
        lines.append(f"- {len(similarity.get('matches', []))} similar past investigations, "
                     f"{similarity.get('fraud_share')} of the decided ones fraud.")
    for hypothesis in (state.get("reasoning") or {}).get("hypotheses", [])[:3]:
        lines.append(f"- hypothesis ({hypothesis['likelihood']}): {hypothesis['statement']}")
    failed = [e["tool_name"] for e in state.get("tool_executions", []) if e["status"] != "SUCCESS"]
    if failed:
        lines.append(f"- failed or timed out: {', '.join(failed)}")
    return "\n".join(lines) or "- nothing yet"
