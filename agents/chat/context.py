"""What the case's agent starts with, and which read-only tools it has, per case type.

The context is the case's own data, its case-type record (a hook a case type registers), and
the latest run of each of its pipelines: each agent's output or error and each tool call.
It goes to the model fenced, as untrusted case data (agents.runtime.prompting.fence_data).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pydantic import BaseModel, Field

from agents.runtime.tools import Tool

# case type -> its record's data for the conversation, and its read-only tools
CONTEXT_HOOKS: dict[str, Callable] = {}
TOOL_FACTORIES: dict[str, Callable[[], tuple[Tool, ...]]] = {}
OUTPUT_CHARS = 3000


def chat_register(case_type: str, *, context: Callable | None = None,
                  tools: Callable[[], tuple[Tool, ...]] | None = None) -> None:
    if context is not None:
        CONTEXT_HOOKS[case_type] = context
    if tools is not None:
        TOOL_FACTORIES[case_type] = tools


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
    hook = CONTEXT_HOOKS.get(case.case_type)
    if hook is not None:
        data["record"] = hook(case)
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


def _support_tools() -> tuple[Tool, ...]:
    from agents.pipelines.support_agents.tools import CUSTOMER_LOOKUP

    return (CUSTOMER_LOOKUP,)


def _release_tools() -> tuple[Tool, ...]:
    from agents.pipelines.releases_agents.tools import read_only_tools

    return read_only_tools()


def _domain(name: str) -> Callable:
    """A case_tools function, imported when first called (it reads the case-type packages)."""
    def call(*args):
        from agents.chat import case_tools

        return getattr(case_tools, name)(*args)

    return call


TIMELINE = Tool("get_case_timeline", "Read the case's audit trail (who did what, when), newest first.", CaseRef,
                get_case_timeline)
chat_register("support_ticket", tools=_support_tools)
chat_register("release_risk", tools=_release_tools)
chat_register("fraud_alert", tools=_domain("fraud_tools"), context=_domain("fraud_context"))
chat_register("access_change", tools=_domain("access_tools"), context=_domain("access_context"))
chat_register("transaction_investigation", tools=_domain("transaction_tools"), context=_domain("transaction_context"))


def tools_for(case_type: str) -> tuple[Tool, ...]:
    """TIMELINE for every case type, then the case type's own read-only tools."""
    factory = TOOL_FACTORIES.get(case_type)
    try:
        own = factory() if factory else ()
    except ImportError:  # a case type whose pipeline module is missing still gets the timeline
        own = ()
    return (TIMELINE, *own)


def _release_context(case) -> dict:
    from casework.releases.selectors import release_latest_report

    release = getattr(case, "release", None)
    if release is None:
        return {}
    report = release_latest_report(release)
    return {"release": release.summary(), "assessment": release.assessment,
            "assessment_error": release.assessment_error,
            "risk_report": {"report_id": report.report_id, "severity": report.severity, "findings": report.findings,
                            "missing_data": report.missing_data, "adjusted_from": report.adjusted_from}
            if report else None}


chat_register("release_risk", context=_release_context)
