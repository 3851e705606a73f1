"""The planner agent (seed 003, sections 4-5): its prompt, its answer, its input, and the
rule-based planner the offline provider runs in its place."""

from __future__ import annotations

from django.conf import settings
from pydantic import BaseModel, Field

from agents.llm.offline_registry import offline_analyst
from agents.runtime.agent import Agent
from casework.transactions.agents.state import COMPLETE, FALLBACK_SEQUENCE, findings_summary

PLANNER_ID = "txn_planner"

TOOL_DESCRIPTIONS = {
    "context_tool": ("Load the transaction, the card's account and its last 90 days of history, and the cases "
                     "people linked to it or that name the same card, device, IP or email (find_related_cases)."),
    "pattern_tool": "Velocity, amount, geography and MCC patterns of this transaction against the history.",
    "similarity_tool": "The nearest past investigations by their feature vectors, with how they were decided.",
    "reasoning_tool": "Hypotheses about what happened, each with its evidence, and a fraud likelihood.",
    "recommendation_tool": "Actions for the investigator, with reasons, from the severity the evidence gives.",
    "rule_draft_tool": "A detection rule drafted from this case, back-tested on recent transactions.",
}

PLANNER_SYSTEM_PROMPT = """\
You are a fraud investigation planner for a card fraud operations team.
Your job is to determine the NEXT investigation step based on current evidence.

You must respond with a JSON object: {"tool": "<name>", "reason": "<why>", "confidence": <0.0-1.0>}
Or to finish: {"tool": "COMPLETE", "reason": "<why>", "confidence": <0.0-1.0>}

The user message gives the current investigation state: transaction_id, completed_steps,
step_count / max_steps, which evidence is available, the current confidence and severity,
the key findings so far and the available tools.

Rules:
1. ALWAYS retrieve context first if not yet available.
2. Run analysis tools (pattern_tool, similarity_tool) BEFORE reasoning_tool.
3. Run reasoning_tool BEFORE recommendation_tool.
4. Run rule_draft_tool ONLY AFTER recommendation_tool.
5. NEVER repeat a tool that is already in completed_steps.
6. Output COMPLETE when the investigation has sufficient evidence and recommendations.
7. Consider confidence and severity when deciding whether more analysis is needed.
8. At HIGH or CRITICAL severity, run recommendation_tool before COMPLETE.
These rules are also enforced after you answer: a choice that breaks one is replaced by the
next tool of the fixed order.
"""


class PlannerChoice(BaseModel):
    tool: str = Field(description="The next tool's name, or COMPLETE to finish.")
    reason: str = Field(description="Why this is the next step, in one or two sentences.", max_length=1000)
    confidence: float = Field(ge=0.0, le=1.0, description="How sure the planner is of this choice, 0 to 1.")


def planner_agent() -> Agent:
    """Built per call: its timeout is TXN_PLANNER_TIMEOUT_SECONDS, and a timeout is not
    retried (the fixed order takes over at once)."""
    return Agent(id=PLANNER_ID, system_prompt=PLANNER_SYSTEM_PROMPT, output_model=PlannerChoice,
                 temperature=0.1, max_tokens=256, timeout=settings.TXN_PLANNER_TIMEOUT_SECONDS, max_retries=0)


def planner_input(state: dict) -> dict:
    """The seed's prompt fields (section 5), plus the history count the rules use."""
    failed = [e["tool_name"] for e in state["tool_executions"] if e["status"] != "SUCCESS"]
    return {
        "transaction_id": state["transaction_id"],
        "completed_steps": list(state["completed_steps"]),
        "failed_steps": failed,
        "step_count": state["step_count"],
        "max_steps": state["max_steps"],
        "has_context": bool(state["context"]),
        "has_patterns": bool(state["pattern_results"]),
        "has_similarity": bool(state["similarity_results"]),
        "has_reasoning": bool(state["reasoning"]),
        "has_recommendations": bool(state["recommendations"]),
        "has_rule_draft": bool(state["rule_draft"]),
        "confidence_score": state["confidence_score"],
        "severity": state["severity"],
        "history_count": (state["context"] or {}).get("history_count"),
        "findings_summary": findings_summary(state),
        "tool_descriptions": [{"name": n, "description": d} for n, d in TOOL_DESCRIPTIONS.items()],
    }


@offline_analyst(PLANNER_ID)
def offline_planner(data: dict) -> dict:
    """The seed's order, skipping what the evidence makes useless: similarity_tool when the
    card has no history to compare, rule_draft_tool when the severity is LOW or MEDIUM."""
    done = set(data["completed_steps"])
    if "context_tool" in done and not data["has_context"]:
        return {"tool": COMPLETE, "reason": "The context could not be loaded; nothing else can be analysed.",
                "confidence": 0.9}
    skipped = []
    for tool in FALLBACK_SEQUENCE:
        if tool in done:
            continue
        if tool == "similarity_tool" and data.get("history_count") == 0:
            skipped.append("the similarity check (the card has no history to compare)")
            continue
        if tool == "rule_draft_tool" and data["severity"] in ("LOW", "MEDIUM"):
            skipped.append(f"the rule draft ({data['severity'].lower()} severity is not worth a rule)")
            continue
        why = {
            "context_tool": "No context yet: load the transaction and its history first.",
            "pattern_tool": "Context loaded: look for velocity, amount, geography and MCC patterns.",
            "similarity_tool": f"{data.get('history_count')} earlier transactions: compare with past investigations.",
            "reasoning_tool": "Patterns and similarity are in: weigh them into hypotheses.",
            "recommendation_tool": f"Reasoning done at {data['severity']} severity: recommend actions.",
            "rule_draft_tool": f"{data['severity']} severity: draft a detection rule from this case.",
        }[tool]
        if skipped:
            why += " Skipped: " + "; ".join(skipped) + "."
        return {"tool": tool, "reason": why, "confidence": 0.85}
    reason = "Evidence, reasoning and recommendations are complete."
    if skipped:
        reason += " Skipped: " + "; ".join(skipped) + "."
    return {"tool": COMPLETE, "reason": reason, "confidence": 0.9}
