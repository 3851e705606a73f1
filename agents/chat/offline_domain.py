"""The offline agent's questions that its case type's read-only tools answer (the tools each
case type registers on its CaseType: casework.cases.types.Chat): fraud (the alert's facts, the
account's history and links, similar decided cases), access (the rights check, the absences),
transactions (the card's transactions, the investigation's record).

Each intent asks for its tools on the first turn and answers from their results on the next,
quoting only what the tools returned (the history holds no earlier question's tool results).
"""

from __future__ import annotations

import re

from django.template.defaultfilters import pluralize

from agents.runtime.prompting import unfence_data

INTENTS: dict[str, list[tuple[str, re.Pattern]]] = {
    "fraud_alert": [
        ("similar", re.compile(r"similar|look.?alike|like this|past cases|confirmed cases", re.I)),
        ("account", re.compile(r"account|other alerts?|\blinks?\b|linked|devices?|\bip\b", re.I)),
        ("facts", re.compile(r"\bfacts?\b|features?|deposits?|withdraw|\bvpn\b|\bkyc\b|face.?match|countr", re.I)),
    ],
    "access_change": [
        ("absences", re.compile(r"\bsick|vacation|\bleave\b|absen|holiday", re.I)),
        ("rights", re.compile(r"authori[sz]|\brights?\b|allowed|permission|entitled", re.I)),
    ],
    "transaction_investigation": [
        ("card", re.compile(r"transactions|\bcard\b|purchases|spending", re.I)),
        ("record", re.compile(r"insights?|hypothes|evidence|executions?|recommendations?|planner", re.I)),
    ],
}


def domain_intent(case_type: str, question: str) -> str:
    return next((name for name, pattern in INTENTS.get(case_type, []) if pattern.search(question)), "")


def _results(messages, name: str) -> list:
    """This question's results of a tool, in the order they were asked for."""
    found = []
    for message in messages or []:
        if message.role == "tool" and message.name == name:
            try:
                found.append(unfence_data(message.content))
            except ValueError:
                found.append({"error": "unparseable", "message": message.content[:200]})
    return found


def _call(name: str, number: int, **arguments) -> dict:
    return {"id": f"{name}-{number}", "name": name, "arguments": arguments}


def _failed(result) -> str | None:
    if isinstance(result, dict) and "error" in result and "message" in result:
        return str(result["message"])
    return None


def answer(intent: str, data: dict, messages):
    """A list of tool calls to make, or the answer's text once their results are in."""
    reference = data["case"]["reference"]
    record = data.get("record") or {}
    if intent in ("similar", "account", "facts"):
        name = {"similar": "find_similar_cases", "account": "get_account_history", "facts": "get_alert_facts"}[intent]
        results = _results(messages, name)
        if not results:
            return [_call(name, 1, reference=reference)]
        result = results[-1]
        if _failed(result):
            return f"{name} failed: {_failed(result)}"
        return {"similar": _similar, "account": _account, "facts": _facts}[intent](result)
    if intent in ("rights", "absences"):
        mutation = record.get("mutation")
        if not mutation:
            return None
        if intent == "rights":
            results = _results(messages, "check_authorization")
            if not results:
                return [_call("check_authorization", 1, employee_id=mutation["changed_by"], system=mutation["system"],
                              access_level=mutation["access_level"], on_date=mutation["change_date"])]
            return _rights(mutation, results[-1])
        results = _results(messages, "lookup_data")
        if not results:
            people = [mutation["changed_by"], mutation["changed_for"]]
            return [_call("lookup_data", n, dataset=dataset, employee_id=person)
                    for n, (person, dataset) in enumerate(((p, d) for p in people for d in ("sick_leave", "vacation")), 1)]
        return _absences(mutation, results)
    if intent in ("card", "record"):
        name = "get_card_transactions" if intent == "card" else "get_investigation_record"
        results = _results(messages, name)
        if not results:
            return [_call(name, 1, reference=reference, **({"limit": 10} if intent == "card" else {}))]
        if _failed(results[-1]):
            return f"{name} failed: {_failed(results[-1])}"
        return (_card if intent == "card" else _record)(results[-1])
    return None


def _similar(result: dict) -> str:
    confirmed, cleared = result["confirmed_count"], result["cleared_count"]
    lines = [f"find_similar_cases: {confirmed} similar confirmed-fraud case{pluralize(confirmed)}, "
             f"{cleared} similar cleared case{pluralize(cleared)}."]
    lines += [f"- {c['reference']} (account {c['account_id']}), distance {c['distance']}"
              + (f", linked by a person as {c['linked_as']}" if c.get("linked_as") else "")
              + (f": {c['pattern']}" if c["pattern"] else "") for c in result["confirmed"]]
    lines += [f"- {c['reference']} {c['outcome_label']} by {c['decided_by']}, distance {c['distance']}"
              + (f", linked by a person as {c['linked_as']}" if c.get("linked_as") else "")
              for c in result["cleared"]]
    return "\n".join(lines)


def _account(result: dict) -> str:
    lines = [f"Account {result['account_id']} (from get_account_history): "
             f"{len(result['other_alerts'])} other alert{pluralize(len(result['other_alerts']))}."]
    lines += [f"- {a['reference']} {a['created_at'][:10]}, risk {a['risk_level'] or 'unscored'}, "
              f"{a['decision'] or a['case_status']}" for a in result["other_alerts"][:10]]
    if result["links"]:
        lines.append("Links: " + ", ".join(f"{link['kind']} {link['value']}" for link in result["links"][:10]) + ".")
    confirmed = result["confirmed_fraud_links"]
    lines.append("Linked accounts with confirmed fraud: " + ("; ".join(
        f"{c['account_id']} ({c['reference']}, shares {', '.join(c['shares'])})" for c in confirmed)
        if confirmed else "none") + ".")
    return "\n".join(lines)


def _facts(result: dict) -> str:
    scores = result["scores"]
    lines = [f"The alert on account {result['account_id']} (from get_alert_facts): risk {scores['risk_level'] or 'unscored'}, "
             f"fraud probability {scores['fraud_probability']}, anomaly score {scores['anomaly_score']}."]
    lines += [f"- {name}: {value}" for name, value in result["features"].items()]
    return "\n".join(lines)


def _rights(mutation: dict, result) -> str:
    if _failed(result):
        return f"check_authorization failed: {_failed(result)}"
    verdict = "was" if result.get("authorized") else "was not"
    held = result.get("held_level") or "no level"
    return (f"check_authorization: {mutation['changed_by']} {verdict} authorised for {mutation['access_level']} on "
            f"{mutation['system']} on {mutation['change_date']} (held: {held}).")


def _absences(mutation: dict, results: list) -> str:
    lines = []
    for result in results:
        if _failed(result):
            lines.append(f"- lookup_data failed: {_failed(result)}")
            continue
        for row in result["rows"]:
            lines.append(f"- {row['employee_id']} {result['dataset'].replace('_', ' ')} {row['start_date']} to "
                         f"{row['end_date']} ({row['status']})")
    people = f"{mutation['changed_by']} (made the change) and {mutation['changed_for']} (changed for)"
    return (f"Absences of {people}, from lookup_data:\n" + "\n".join(lines)) if lines else \
        f"lookup_data lists no sick leave or vacation for {people}."


def _card(result: dict) -> str:
    lines = [f"Card {result['card']} ({result['count']} transactions; investigated {result['investigated']}), "
             "newest first, from get_card_transactions:"]
    lines += [f"- {t['occurred_at'][:16].replace('T', ' ')} {t['amount']} {t['currency']} {t['merchant']} "
              f"(MCC {t['mcc']}, {t['country']}, {t['channel']}){' fraud' if t['is_fraud'] else ''}"
              + (" ← investigated" if t["transaction_id"] == result["investigated"] else "")
              for t in result["transactions"]]
    return "\n".join(lines)


def _record(result: dict) -> str:
    lines = [f"{result['reference']} (from get_investigation_record): {result['status']}, severity "
             f"{result['severity']}, confidence {result['confidence']}."]
    lines += [f"- step {t['step']} {t['tool']}: {t['status']}" + (f" ({t['error']})" if t["error"] else "")
              for t in result["tool_executions"]]
    lines += [f"- insight ({i['kind']}): {i['title']}" for i in result["insights"]]
    lines += [f"- recommendation: {r['title']} ({r['status']})" for r in result["recommendations"]]
    return "\n".join(lines)
