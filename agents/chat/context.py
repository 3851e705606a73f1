"""What the case's agent starts with, and which read-only tools it has, per case type.

The context is the case's own data, its case-type record (what the type registered on its
CaseType: casework.cases.types.Chat.context), and the latest run of each of its pipelines: each
agent's output or error and each tool call. It goes to the model fenced, as untrusted case data
(agents.runtime.prompting.fence_data). The tools are the timeline, then the type's own
read-only tools (Chat.tools).
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from agents.chat.asker import asker, for_the_asker, visible_case
from agents.runtime.tools import Tool

OUTPUT_CHARS = 3000


class CaseArgs(BaseModel):
    """The argument every case type's chat tool takes: which case."""

    reference: str = Field(min_length=1, max_length=20, description="The case reference, e.g. FRA-000012.")


def _chat(case_type: str):
    from casework.cases.types import CASE_TYPES

    case_type = CASE_TYPES.get(case_type)
    return case_type.chat if case_type is not None else None


def _clip(value, limit: int = OUTPUT_CHARS):
    text = json.dumps(value, default=str, ensure_ascii=False)
    return value if len(text) <= limit else text[:limit] + " …(cut)"


def case_context(case) -> dict:
    from agents.models import AgentRun
    from casework.cases.selectors import case_final_decision

    runs, seen = [], set()
    for run in AgentRun.objects.filter(case=case).order_by("-created_at", "-id").prefetch_related("calls")[:20]:
        if (run.pipeline, run.mode) in seen:
            continue
        seen.add((run.pipeline, run.mode))
        tools = [{"tool": c.name, "arguments": c.input, "ok": c.status == "ok",
                  "result": _clip((c.output or {}).get("result"), 600) if c.status == "ok" else c.error[:300]}
                 for c in run.calls.all() if c.kind == "tool"]
        results = {key: {"agent": entry.get("agent", key), "output": _clip(entry.get("output")),
                         "error": entry.get("error", "")}
                   for key, entry in run.results.items()}
        runs.append({"pipeline": run.pipeline, "mode": run.mode, "status": run.status, "error": run.error,
                     "provider": run.provider, "results": results, "tool_calls": tools[:30]})
    decision = case_final_decision(case)
    data = {
        "case": {"reference": case.reference, "type": case.get_case_type_display(), "case_type": case.case_type,
                 "title": case.title,
                 "description": case.description[:2000], "status": case.status, "priority": case.priority},
        "agent_runs": runs[:4],
        "decision": {"outcome": decision.outcome_label, "reason": decision.reason[:1000]} if decision else None,
    }
    chat = _chat(case.case_type)
    if chat is not None and chat.context is not None:
        data["record"] = chat.context(case)
    return data


class CaseRef(BaseModel):
    reference: str = Field(min_length=1, max_length=20, description="The case reference, e.g. REL-000001.")
    limit: int = Field(default=20, ge=1, le=50, description="How many entries, newest first.")


def get_case_timeline(args: CaseRef) -> dict:
    from audit.models import AuditEntry

    entries = AuditEntry.objects.filter(case_ref=args.reference.upper()).order_by("-id")[:args.limit]
    return {"reference": args.reference.upper(), "entries": [
        {"action": e.action, "actor": e.actor, "at": e.timestamp.isoformat(), "data": _clip(e.data, 400)}
        for e in entries]}


TIMELINE = Tool("get_case_timeline", "Read the case's audit trail (who did what, when), newest first.", CaseRef,
                get_case_timeline, consequence="read_only")


class RelatedArgs(BaseModel):
    reference: str = Field(min_length=1, max_length=20, description="The case reference, e.g. SUP-000004.")
    limit: int = Field(default=10, ge=1, le=30, description="At most this many entities and linked cases.")


def find_related_cases(args: RelatedArgs) -> dict:
    """Cases of any type related to this one: the cases people linked or merged with it, and,
    for each account, card, customer, email, device, IP ... the case names, the other cases
    naming it (newest first, with status and decision) and whether fraud was confirmed on it."""
    from casework.cases.models import Case
    from casework.entities.selectors import FOR_THE_CASE, related_cases

    case = Case.objects.filter(reference=args.reference.upper()).first()
    if case is None:
        raise LookupError(f"No case {args.reference!r}.")
    return related_cases(case, viewer=FOR_THE_CASE, limit=args.limit)


def find_related_cases_for_asker(args: RelatedArgs) -> dict:
    """find_related_cases in "Ask the agent": the case and the cases it lists are those the
    person who asked may see."""
    from casework.entities.selectors import related_cases

    return related_cases(visible_case(args.reference), viewer=asker(), limit=args.limit)


# The pipelines' tool (the support supervisor's): it reads for the case, every related case.
RELATED = Tool("find_related_cases", find_related_cases.__doc__.strip(), RelatedArgs, find_related_cases,
               consequence="read_only")
# The same tool in "Ask the agent", for the person asking.
RELATED_FOR_ASKER = Tool(RELATED.name, RELATED.description, RelatedArgs, find_related_cases_for_asker,
                         consequence="read_only")


def tools_for(case_type: str) -> tuple[Tool, ...]:
    """TIMELINE and RELATED for every case type, then the case type's own read-only tools: each
    for the person who asked (agents.chat.asker.for_the_asker)."""
    chat = _chat(case_type)
    factory = chat.tools if chat is not None else None
    try:
        own = factory() if factory else ()
    except ImportError:  # a case type whose pipeline module is missing still gets the timeline
        own = ()
    return tuple(for_the_asker(tool) for tool in (TIMELINE, RELATED_FOR_ASKER, *own))
