"""The offline assistant's questions the change's read-only tools answer (casework/access/chat_tools.py):
the rights check and the absences of the people involved. Registered as Chat.offline."""

from __future__ import annotations

import re

from agents.chat.offline_domain import intent_answer, tool_call, tool_failed, tool_results

INTENTS = [
    ("absences", re.compile(r"\bsick|vacation|\bleave\b|absen|holiday", re.I)),
    ("rights", re.compile(r"authori[sz]|\brights?\b|allowed|permission|entitled", re.I)),
]


def answer(intent: str, data: dict, messages):
    """A list of tool calls to make, or the answer's text once their results are in."""
    mutation = (data.get("record") or {}).get("mutation")
    if not mutation:
        return None
    if intent == "rights":
        results = tool_results(messages, "check_authorization")
        if not results:
            return [tool_call("check_authorization", 1, employee_id=mutation["changed_by"], system=mutation["system"],
                              access_level=mutation["access_level"], on_date=mutation["change_date"])]
        return _rights(mutation, results[-1])
    results = tool_results(messages, "lookup_data")
    if not results:
        people = [mutation["changed_by"], mutation["changed_for"]]
        return [tool_call("lookup_data", n, dataset=dataset, employee_id=person)
                for n, (person, dataset) in enumerate(((p, d) for p in people for d in ("sick_leave", "vacation")), 1)]
    return _absences(mutation, results)


def _rights(mutation: dict, result) -> str:
    if tool_failed(result):
        return f"check_authorization failed: {tool_failed(result)}"
    verdict = "was" if result.get("authorized") else "was not"
    held = result.get("held_level") or "no level"
    return (f"check_authorization: {mutation['changed_by']} {verdict} authorised for {mutation['access_level']} on "
            f"{mutation['system']} on {mutation['change_date']} (held: {held}).")


def _absences(mutation: dict, results: list) -> str:
    lines = []
    for result in results:
        if tool_failed(result):
            lines.append(f"- lookup_data failed: {tool_failed(result)}")
            continue
        for row in result["rows"]:
            lines.append(f"- {row['employee_id']} {result['dataset'].replace('_', ' ')} {row['start_date']} to "
                         f"{row['end_date']} ({row['status']})")
    people = f"{mutation['changed_by']} (made the change) and {mutation['changed_for']} (changed for)"
    return (f"Absences of {people}, from lookup_data:\n" + "\n".join(lines)) if lines else \
        f"lookup_data lists no sick leave or vacation for {people}."


access_chat_offline = intent_answer(INTENTS, answer)
