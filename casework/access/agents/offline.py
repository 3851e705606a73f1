"""Offline analysts for the access agents: deterministic, and they really use the tools.

Each is the two-argument form (input, messages): it looks at the tool results that have
arrived in the conversation, asks for the tools it still needs, and answers once it has
what it needs. Everything it concludes comes from tool results, never from the database
directly, so the offline run exercises the same tools, gates and failures a model would.
"""

from __future__ import annotations

from datetime import date

from agents.llm.offline_registry import offline_analyst, readable_error, tool_call, tool_failed, tool_results

# --- investigation orchestrator -------------------------------------------------------------

@offline_analyst("access_orchestrator")
def orchestrator(data: dict, messages=None):
    mutation_id = data["mutation_id"]
    seen = tool_results(messages)
    if "lookup_data" not in seen:
        return [tool_call("lookup_data", 1, dataset="mutation", mutation_id=mutation_id),
                tool_call("lookup_data", 2, dataset="audit_trail", mutation_id=mutation_id)]
    rows = next((r["rows"] for r in seen["lookup_data"] if not tool_failed(r) and r.get("dataset") == "mutation"), None)
    m = rows[0] if rows else data["context"]["mutation"]
    by, for_ = data["context"]["changed_by"], data["context"]["changed_for"]
    concerns = []
    if m["changed_by"] == m["changed_for"]:
        concerns.append(f"{m['changed_by_name']} changed their own access.")
    if by.get("department") and for_.get("department") and by["department"] != for_["department"]:
        concerns.append(f"The change crosses departments ({by['department']} changed {for_['department']}).")
    if m["access_level"].lower() == "admin":
        concerns.append("The change needed admin rights.")
    summary = (f"{m['changed_by_name']} ({m['changed_by']}, {by.get('job_title') or 'no title'}) changed "
               f"{m['field_changed']} for {m['changed_for_name']} ({m['changed_for']}) on {m['system']}"
               f"{' from ' + m['old_value'] if m.get('old_value') else ''}"
               f"{' to ' + m['new_value'] if m.get('new_value') else ''} on {m['change_date']}; "
               f"the change needed {m['access_level']} access.")
    return {"mutation_id": m["mutation_id"], "summary": summary, "concerns": concerns, "next_action": "check_rights"}


# --- rights check -----------------------------------------------------------------------------

@offline_analyst("access_rights_check")
def rights_check(data: dict, messages=None):
    seen = tool_results(messages)
    if "check_authorization" not in seen:
        return [tool_call("check_authorization", 1, employee_id=data["user_id"], system=data["system"],
                      access_level=data["access_level"], on_date=data["change_date"])]
    result = seen["check_authorization"][-1]
    if tool_failed(result):
        return {"checked": False, "authorized": False, "held_level": "", "covering_references": [],
                "message": f"The rights could not be checked: {readable_error(result['message'])}"}
    covering = [row["reference"] for row in result["evidence"] if row.get("covers")]
    who = data.get("context", {}).get("changed_by", {}).get("name")
    who = f"{who} ({data['user_id']})" if who else data["user_id"]
    if result["authorized"]:
        message = (f"{who} held {data['access_level']} or higher on {data['system']} on "
                   f"{data['change_date']} through {', '.join(covering)}.")
    else:
        held = result.get("held_level")
        reasons = [f"{row['reference']}: {row['note']}" for row in result["evidence"]
                   if row.get("system") in (data["system"], "") and row.get("note") and row.get("reference")]
        message = (f"{who} did not hold {data['access_level']} on {data['system']} on "
                   f"{data['change_date']}" + (f" (highest level held: {held})" if held else " (no rights on it)")
                   + (". " + "; ".join(reasons[:4]) if reasons else "."))
    return {"checked": True, "authorized": bool(result["authorized"]), "held_level": result.get("held_level") or "",
            "covering_references": covering, "message": message}


# --- request for information ------------------------------------------------------------------

def _notify(data: dict, seen: dict, recipient: str, subject: str, body: str) -> dict | list:
    if "send_notification" not in seen:
        return [tool_call("send_notification", 1, mutation_id=data["mutation_id"], recipient=recipient,
                      subject=subject, body=body)]
    result = seen["send_notification"][-1]
    if tool_failed(result):
        return {"action": data["action"], "notified": False, "message": f"The {recipient} could not be notified: "
                f"{readable_error(result['message'])}"}
    return {"action": data["action"], "notified": True, "request_id": result["request_id"],
            "message": f"{result['recipient_name']} was asked"
                       + (" again (a request was already open)." if result.get("already_open") else ".")}


def _clarification(data: dict, seen: dict):
    m = data["context"]["mutation"]
    rights = data.get("rights_check") or {}
    body = (f"Dear {m['changed_by_name']},\n\nOn {m['change_date']} you changed {m['field_changed']} for "
            f"{m['changed_for_name']} on {m['system']}"
            f"{' from ' + m['old_value'] if m.get('old_value') else ''}"
            f"{' to ' + m['new_value'] if m.get('new_value') else ''}. That change needs {m['access_level']} "
            f"access on {m['system']}, and our records show you did not hold it that day"
            f"{' (you held ' + rights['held_level'] + ')' if rights.get('held_level') else ''}.\n\n"
            "Please tell us why you made the change: for instance, whether you were covering for a colleague "
            "who was on sick leave or on vacation. It takes two minutes.")
    return _notify(data, seen, "employee", f"Please explain a change you made on {m['system']}", body)


def _manager(data: dict, seen: dict):
    m = data["context"]["mutation"]
    claim = data.get("claim") or {}
    detail = claim.get("validation_detail") or {}
    story = claim.get("claim_type_label", "an explanation")
    if claim.get("colleague_name"):
        story += f" ({claim['colleague_name']}, {claim.get('period_start')} to {claim.get('period_end')})"
    body = (f"{m['changed_by_name']} changed {m['field_changed']} for {m['changed_for_name']} on {m['system']} on "
            f"{m['change_date']} without holding {m['access_level']} access. Asked why, they answered: {story}. "
            f"\"{claim.get('explanation', '')}\"\n\nWhat the records show: {detail.get('message', 'not checked')}\n\n"
            f"As their {(data.get('validator') or {}).get('role') or 'manager'}, please approve the change if it "
            "was legitimate, or deny it.")
    return _notify(data, seen, "manager", f"Please validate a change {m['changed_by_name']} made on {m['system']}",
                   body)


def _in_period(claim: dict, day: date) -> bool:
    if not claim.get("period_start") or not claim.get("period_end"):
        return False
    return date.fromisoformat(claim["period_start"]) <= day <= date.fromisoformat(claim["period_end"])


def _validate(data: dict, seen: dict):
    claim = data["claim"]
    day = date.fromisoformat(data["change_date"])
    if claim["claim_type"] == "other":
        return {"action": "validate_claim", "claim_status": "unverifiable",
                "checks": [{"check": "Records to check against", "passed": False,
                            "detail": "The employee gave another reason; no absence record can confirm it."}],
                "message": "The explanation cannot be checked against sick leave or vacation records, so the "
                           "records do not support it."}
    dataset = "sick_leave" if claim["claim_type"] == "sick_leave_cover" else "vacation"
    absence = "sick leave" if dataset == "sick_leave" else "vacation"
    if "lookup_data" not in seen:
        return [tool_call("lookup_data", 1, dataset="employee", employee_id=claim["colleague_id"]),
                tool_call("lookup_data", 2, dataset=dataset, employee_id=claim["colleague_id"])]
    results = seen["lookup_data"]
    failed = [r for r in results if tool_failed(r)]
    if failed:
        # Let the step fail honestly: an answer without the records would be a guess.
        return {"action": "validate_claim", "message": f"The records could not be read: {readable_error(failed[0]['message'])}"}
    colleague = next((r["rows"][0] for r in results if r.get("dataset") == "employee" and r["rows"]), None)
    rows = next((r["rows"] for r in results if r.get("dataset") == dataset), [])
    covering = [r for r in rows if r["status"] == "approved"
                and date.fromisoformat(r["start_date"]) <= day <= date.fromisoformat(r["end_date"])]
    employed = bool(colleague) and colleague["status"] == "active"
    in_period = _in_period(claim, day)
    nearest = ", ".join(f"{r['start_date']} to {r['end_date']} ({r['status']})" for r in rows[-3:]) or "none"
    checks = [
        {"check": f"{claim['colleague_name'] or claim['colleague_id']} is a colleague in employment",
         "passed": employed, "detail": f"{colleague['name']}, {colleague['department']}, {colleague['status']}"
         if colleague else "no such employee"},
        {"check": f"An approved {absence} of the colleague covers {day}", "passed": bool(covering),
         "detail": ("records " + ", ".join(f"{r['record_id']} ({r['start_date']} to {r['end_date']})" for r in covering))
         if covering else f"no approved {absence} on {day}; recorded: {nearest}"},
        {"check": f"The period the employee states includes {day}", "passed": in_period,
         "detail": f"stated {claim.get('period_start')} to {claim.get('period_end')}"},
    ]
    valid = all(c["passed"] for c in checks)
    if valid:
        message = (f"Confirmed: {claim['colleague_name']} was on approved {absence} on {day} "
                   f"({covering[0]['start_date']} to {covering[0]['end_date']}), within the period stated.")
    else:
        message = "Not confirmed: " + "; ".join(f"{c['check'].lower()} — {c['detail']}" for c in checks if not c["passed"])
    return {"action": "validate_claim", "claim_status": "valid" if valid else "invalid", "checks": checks,
            "cited_records": [r["record_id"] for r in covering] if valid else [], "message": message}


@offline_analyst("access_request_info")
def request_info(data: dict, messages=None):
    seen = tool_results(messages)
    action = data["action"]
    if action == "request_clarification":
        return _clarification(data, seen)
    if action == "request_manager_validation":
        return _manager(data, seen)
    return _validate(data, seen)


# --- advisory ---------------------------------------------------------------------------------

def _recommend(data: dict) -> tuple[str, str]:
    status = data["status"]
    claim = data.get("claim") or {}
    verdict = data.get("manager_verdict") or {}
    rights = data.get("rights_check") or {}
    if status == "manual_intervention_required":
        return "manual_intervention", "A step of the investigation failed; a person has to finish it."
    if status == "rejected_invalid_claim":
        if claim.get("validation") == "unverifiable":
            return "reject_investigate", "No record could verify the employee's explanation."
        return "reject_investigate", "The employee's explanation is not confirmed by the records."
    if status == "rejected_manager_denied":
        return "reject_investigate", "The manager denied the change."
    if rights.get("authorized"):
        return "accept", "The change was authorised."
    if verdict.get("approved") and claim.get("validation") == "unverifiable":
        return "manual_intervention", ("The manager approved, but the explanation could not be checked against "
                                       "records: correct, but a person should review it.")
    return "accept", "The manager approved an explanation the records confirm."


@offline_analyst("access_advisory")
def advisory(data: dict, messages=None):
    seen = tool_results(messages)
    mutation_id = data["mutation_id"]
    if "lookup_data" not in seen:
        return [tool_call("lookup_data", 1, dataset="audit_trail", mutation_id=mutation_id)]
    m = data["context"]["mutation"]
    recommendation, why = _recommend(data)
    trail = next((r["rows"] for r in seen["lookup_data"] if not tool_failed(r)), [])
    details = [f"Change: {m['changed_by_name']} changed {m['field_changed']} for {m['changed_for_name']} on "
               f"{m['system']} on {m['change_date']} (needs {m['access_level']})."]
    rights = data.get("rights_check")
    if rights:
        details.append(f"Rights check: {rights['message']}")
    claim = data.get("claim")
    if claim:
        if claim["claim_type"] in ("sick_leave_cover", "vacation_cover"):
            # The report is shown to everyone who sees the case: it names no kind or dates of an
            # absence and quotes neither the explanation nor the check's message (special-category;
            # the claim panel shows them to the teams owning access changes).
            details.append(f"Employee's explanation: covered {claim['colleague_name']}'s absence (its kind, dates "
                           "and the explanation are on the Answers tab, for the teams owning access changes).")
            if claim.get("validation_detail"):
                details.append(f"Claim validation: {claim['validation']}.")
        else:
            details.append(f"Employee's explanation: another reason: \"{claim['explanation']}\"")
            if claim.get("validation_detail"):
                details.append(f"Claim validation ({claim['validation']}): "
                               f"{claim['validation_detail'].get('message', '')}")
    verdict = data.get("manager_verdict")
    if verdict:
        details.append(f"Manager {verdict['manager']} {'approved' if verdict['approved'] else 'denied'}: "
                       f"\"{verdict['comment']}\"")
    for failure in data.get("failures") or []:
        last = readable_error(failure["errors"][-1]["error"]) if failure.get("errors") else "unknown error"
        details.append(f"{failure['label']} failed {failure['attempts']} times; last error: {last}")
    for concern in data.get("concerns") or []:
        details.append(f"Concern: {concern}")
    if trail:
        details.append("Status history: " + " → ".join(r.get("new_status_label") or r["new_status"] for r in trail))
    kind = data["report_kind"]
    summary = (f"{'Manual intervention needed' if kind == 'manual_intervention' else data['status_label']}: "
               f"{why} {m['changed_by_name']}'s change of {m['field_changed']} for {m['changed_for_name']} on "
               f"{m['system']} ({m['change_date']}).")
    return [tool_call("generate_report", 1, mutation_id=mutation_id, report_kind=kind, summary=summary,
                  recommendation=recommendation, details=details)]
