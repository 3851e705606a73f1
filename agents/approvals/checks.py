"""System checks (issue 46): every tool an agent may call declares its consequence; "Ask the
agent" offers only read-only tools (it has no approval step); every "acts" tool waits for a
person unless the settings say otherwise on purpose; AGENT_APPROVALS names known tools with
well-formed rules."""

from __future__ import annotations

from django.conf import settings
from django.core import checks

from agents.runtime.tools import CONSEQUENCES, READ_ONLY, Tool


def tools_registered() -> dict[str, list[tuple[str, Tool]]]:
    """Every tool an agent may call, by where it is offered: "pipeline:<name>" (its agents' tools
    and those its plans run directly) and "chat:<case type>" ("Ask the agent")."""
    from agents.chat.context import tools_for
    from agents.runtime.pipeline import PIPELINES
    from casework.cases.types import CASE_TYPES

    found: dict[str, list[tuple[str, Tool]]] = {}
    for name, pipeline in PIPELINES.items():
        tools = [*pipeline.tools, *(t for agent in pipeline.agents.values() for t in agent.tools)]
        found[f"pipeline:{name}"] = [(tool.name, tool) for tool in tools]
    for key in CASE_TYPES:
        found[f"chat:{key}"] = [(tool.name, tool) for tool in tools_for(key)]
    return found


def tool_consequences_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    from agents.runtime.approval import ApprovalPolicies, rule_parse

    problems: list[checks.CheckMessage] = []
    known: set[str] = set()
    defaults = ApprovalPolicies(case_type="", overrides={})  # the settings alone, no admin rows
    for where, tools in tools_registered().items():
        for name, tool in tools:
            known.add(name)
            if tool.consequence not in CONSEQUENCES:
                problems.append(checks.Error(f"{where}: the tool {name!r} declares no consequence.", id="agents.E101",
                                             hint=f"Give it consequence= one of {', '.join(CONSEQUENCES)}."))
            elif where.startswith("chat:") and tool.consequence != READ_ONLY:
                problems.append(checks.Error(f"{where}: 'Ask the agent' offers {name!r}, which {tool.consequence}.",
                                             id="agents.E102", hint="The conversation has no approval step: "
                                             "offer only read_only tools there."))
            elif tool.acts and defaults.rule_for(name)[0]["mode"] != "always":
                problems.append(checks.Warning(
                    f"{where}: {name!r} acts outside Casework and AGENT_APPROVALS lets it run without a person's "
                    f"approval ({defaults.rule_for(name)[0]}).", id="agents.W101",
                    hint="Intended? The default for a tool that contacts a person or a system is 'always'."))
    for name, rules in settings.AGENT_APPROVALS.items():
        if name not in known:
            problems.append(checks.Warning(f"AGENT_APPROVALS names {name!r}, which no agent may call.",
                                           id="agents.W102"))
        for case_type, rule in (rules.items() if isinstance(rules, dict) else [("?", rules)]):
            try:
                rule_parse(rule)
            except ValueError as exc:
                problems.append(checks.Error(f"AGENT_APPROVALS[{name!r}][{case_type!r}]: {exc}", id="agents.E103"))
    return problems
