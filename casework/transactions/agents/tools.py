"""The six investigation tools (seed 003, section 8). Each runs directly as a step of the
run (not through a model), on a pool thread with TXN_TOOL_TIMEOUT_SECONDS; the database
reads happen here, never on the event loop.

HANDLERS maps a tool's name to its function: a tool is built from it at each step, so a test
can replace one (a tool that fails, or one that hangs)."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from pydantic import BaseModel, Field

from agents.runtime.tools import Tool
from casework.transactions.agents import findings
from casework.transactions.agents.planner import TOOL_DESCRIPTIONS


class ToolInput(BaseModel):
    investigation_id: int = Field(description="The investigation's id.")
    transaction_id: str = Field(description="The transaction under investigation.")
    state: dict = Field(default_factory=dict, description="The parts of the investigation state this tool reads.")


RELATED_LIMIT = 10


def context_tool(args: ToolInput) -> dict:
    """The transaction, its card's history and linked cards, and `related_cases`: what
    find_related_cases (the read-only tool of "Ask the agent", same selector) says about the
    investigation's case (the cases people linked to it, the other cases naming its card,
    device, IP, email or merchant, with their decisions)."""
    from casework.transactions.analysis import load_context

    return {**load_context(args.transaction_id), "related_cases": _related_cases(args.investigation_id)}


def _related_cases(investigation_id: int) -> dict:
    from casework.entities.selectors import FOR_THE_CASE, related_cases
    from casework.transactions.models import Investigation

    investigation = Investigation.objects.select_related("case").filter(pk=investigation_id).first()
    if investigation is None:
        return {}
    # The pipeline reads for the case, unfiltered; "Ask the agent" reads for the person asking.
    found = related_cases(investigation.case, viewer=FOR_THE_CASE, limit=RELATED_LIMIT)

    def brief(case: dict) -> dict:
        return {k: case[k] for k in ("reference", "type", "status", "decision", "confirms_fraud")}

    return {"linked": [brief(c) for c in found["linked"]],
            "entities": [{"kind": e["kind"], "value": e["value"], "confirmed_fraud": e["confirmed_fraud"],
                          "other_case_count": e["other_case_count"],
                          "other_cases": [brief(c) for c in e["other_cases"]]}
                         for e in found["entities"] if e["other_case_count"] or e["confirmed_fraud"]]}


def pattern_tool(args: ToolInput) -> dict:
    from casework.transactions.analysis import load_history, patterns_for, txn_row
    from casework.transactions.models import Transaction

    txn = Transaction.objects.select_related("account").get(transaction_id=args.transaction_id)
    return patterns_for(txn_row(txn), load_history(txn), txn.account.home_country)


def similarity_tool(args: ToolInput) -> dict:
    from casework.transactions import similarity

    patterns = args.state.get("pattern_results") or pattern_tool(args)
    vector = similarity.vector_of(patterns)
    matches = similarity.nearest(vector, exclude_pk=args.investigation_id)
    decided = [m for m in matches if m["outcome"]]
    fraud = [m for m in decided if m["outcome"] == "fraud"]
    return {"vector": vector, "bucket": similarity.bucket_of(vector), "matches": matches, "decided": len(decided),
            "fraud_share": round(len(fraud) / len(decided), 3) if decided else None}


def reasoning_tool(args: ToolInput) -> dict:
    return findings.reason({"transaction_id": args.transaction_id, **args.state})


def recommendation_tool(args: ToolInput) -> dict:
    return {"recommendations": findings.recommend({"transaction_id": args.transaction_id, **args.state})}


def rule_draft_tool(args: ToolInput) -> dict:
    from casework.transactions.backtest import backtest

    draft = findings.draft_rule({"transaction_id": args.transaction_id, **args.state})
    return {**draft, "backtest": backtest(draft["conditions"], drafted_from=args.transaction_id)}


HANDLERS: dict[str, Callable[[ToolInput], dict]] = {
    "context_tool": context_tool,
    "pattern_tool": pattern_tool,
    "similarity_tool": similarity_tool,
    "reasoning_tool": reasoning_tool,
    "recommendation_tool": recommendation_tool,
    "rule_draft_tool": rule_draft_tool,
}
# What running each tool does (agents.runtime.tools): the rule draft is a draft a person promotes.
CONSEQUENCES = {name: "drafts" if name == "rule_draft_tool" else "read_only" for name in HANDLERS}
# What each tool reads from the state (kept small: the call's input is stored with it).
READS = {
    "context_tool": (),
    "pattern_tool": (),
    "similarity_tool": ("pattern_results",),
    "reasoning_tool": ("context", "pattern_results", "similarity_results"),
    "recommendation_tool": ("context", "pattern_results", "similarity_results", "reasoning"),
    "rule_draft_tool": ("context", "pattern_results", "reasoning"),
}


def build_tool(name: str, timeout: float | None = None) -> Tool:
    handler = HANDLERS[name]
    return Tool(name=name, description=TOOL_DESCRIPTIONS[name], parameters=ToolInput,
                handler=lambda args: handler(args), timeout=timeout or settings.TXN_TOOL_TIMEOUT_SECONDS,
                consequence=CONSEQUENCES[name])


def tool_input(name: str, state: dict) -> dict:
    reads = {key: state[key] for key in READS[name] if state.get(key)}
    if "context" in reads:
        reads["context"] = {k: v for k, v in reads["context"].items() if k != "recent"}
    return {"investigation_id": int(state["investigation_id"]), "transaction_id": state["transaction_id"],
            "state": reads}


def output_summary(name: str, output: dict) -> dict:
    """A few keys of a tool's output for the execution log (seed ToolExecution.output_summary)."""
    match name:
        case "context_tool":
            related = output.get("related_cases") or {}
            return {"history_count": output.get("history_count"), "account": output.get("account", {}).get("account_id"),
                    "linked_cases": len(related.get("linked", [])),
                    "entities_in_other_cases": len(related.get("entities", []))}
        case "pattern_tool":
            return {"flagged": output.get("flagged"), "risk_score": output.get("risk_score")}
        case "similarity_tool":
            return {"matches": len(output.get("matches", [])), "fraud_share": output.get("fraud_share")}
        case "reasoning_tool":
            return {"hypotheses": [h["key"] for h in output.get("hypotheses", [])],
                    "fraud_likelihood": output.get("fraud_likelihood")}
        case "recommendation_tool":
            return {"actions": [r["action"] for r in output.get("recommendations", [])]}
        case "rule_draft_tool":
            return {"name": output.get("name"), "backtest": (output.get("backtest") or {}).get("summary")}
    return {}
