"""The investigation orchestrator and the rights check: the first two steps of a review."""

from __future__ import annotations

from agents.models import AgentCall
from casework.access.agents.flow import Flow, Step, facts, investigation_context
from casework.access.agents.prompts import CASEWORK, IA, ORCHESTRATOR, RIGHTS_CHECK


def _orchestrate_accept(flow: Flow, key: str, output: dict) -> str:
    if output.get("mutation_id") != flow.mutation.mutation_id:
        return f"The orchestrator summarised mutation {output.get('mutation_id')!r}, not {flow.mutation.mutation_id}."
    return ""


def _orchestrate_done(flow: Flow, key: str, output: dict) -> dict:
    flow.state["summary"] = output.get("summary", "")
    flow.state["concerns"] = output.get("concerns", [])
    return {"summary": output.get("summary", ""), "concerns": output.get("concerns", [])}


# --- rights check -----------------------------------------------------------------------------

def _rights_input(flow: Flow) -> dict:
    m = flow.mutation
    return {"action": "check_rights", "mutation_id": m.mutation_id, "user_id": m.changed_by.employee_id,
            "system": m.system.code, "access_level": m.access_level.name, "change_date": m.change_date.isoformat(),
            "context": facts(flow), **investigation_context(flow)}


def _matching_check(flow: Flow, key: str) -> dict | None:
    m = flow.mutation
    for call in reversed(flow.tool_results(key, "check_authorization")):
        args = call["arguments"]
        if (args.get("employee_id") == m.changed_by.employee_id and str(args.get("system", "")).lower() == m.system.code.lower()
                and str(args.get("access_level", "")).lower() == m.access_level.name.lower()
                and str(args.get("on_date")) == m.change_date.isoformat() and isinstance(call["result"], dict)):
            return call["result"]
    return None


def _rights_accept(flow: Flow, key: str, output: dict) -> str | tuple[str, str]:
    failed = AgentCall.objects.filter(run=flow.ctx.run, kind=AgentCall.Kind.TOOL, key__startswith=f"{key}.",
                                      name="check_authorization", status=AgentCall.Status.ERROR).last()
    result = _matching_check(flow, key)
    if result is None:
        if failed:
            return failed.error, "tool_error"
        return "The rights check did not call check_authorization for this change's employee, system, level and day."
    if bool(output.get("authorized")) != bool(result.get("authorized")):
        return (f"The rights check concluded authorized={output.get('authorized')} but check_authorization "
                f"found authorized={result.get('authorized')}.")
    return ""


def _rights_done(flow: Flow, key: str, output: dict) -> dict:
    from casework.access.services import rights_check_record

    result = _matching_check(flow, key)
    check = rights_check_record(mutation=flow.mutation, result=result, message=output.get("message", ""),
                                run_id=flow.run_id, call_key=key)
    covering = [r["reference"] for r in check.evidence if r.get("covers")]
    if check.authorized:
        flow.transition("approved", f"Authorised: {', '.join(covering)} covered the change.")
    else:
        flow.transition("clarification_requested",
                        f"Not authorised: {output.get('message', '')[:300] or 'no authorisation covered the change'}")
    return {"authorized": check.authorized, "held_level": check.held_level, "covering": covering,
            "message": output.get("message", "")}


ORCHESTRATE = Step(
    name="orchestrate", label="Investigation orchestrator", agent=ORCHESTRATOR, sender=CASEWORK,
    action="investigate_mutation", reply="investigation_context",
    needed=lambda f: f.status == "investigation_started" and f.mutation.rights_checks.count() == 0,
    build=lambda f: {"action": "investigate_mutation", "mutation_id": f.mutation.mutation_id, "context": facts(f)},
    accept=_orchestrate_accept, done=_orchestrate_done,
)
CHECK_RIGHTS = Step(
    name="rights_check", label="Rights check", agent=RIGHTS_CHECK, sender=IA, action="check_rights",
    reply="check_rights_result",
    needed=lambda f: f.status == "investigation_started" and f.step("orchestrate")["status"] == "ok",
    build=_rights_input, accept=_rights_accept, done=_rights_done,
)
