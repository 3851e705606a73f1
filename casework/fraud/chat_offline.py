"""The offline assistant's questions the alert's read-only tools answer (casework/fraud/chat_tools.py):
its facts, the account's history and links, similar decided cases. Registered as Chat.offline."""

from __future__ import annotations

import re

from django.template.defaultfilters import pluralize

from agents.chat.offline_domain import intent_answer, tool_call, tool_failed, tool_results

INTENTS = [
    ("similar", re.compile(r"similar|look.?alike|like this|past cases|confirmed cases", re.I)),
    ("account", re.compile(r"account|other alerts?|\blinks?\b|linked|devices?|\bip\b", re.I)),
    ("facts", re.compile(r"\bfacts?\b|features?|deposits?|withdraw|\bvpn\b|\bkyc\b|face.?match|countr", re.I)),
]


def answer(intent: str, data: dict, messages):
    """A list of tool calls to make, or the answer's text once their results are in."""
    name = {"similar": "find_similar_cases", "account": "get_account_history", "facts": "get_alert_facts"}[intent]
    results = tool_results(messages, name)
    if not results:
        return [tool_call(name, 1, reference=data["case"]["reference"])]
    result = results[-1]
    if tool_failed(result):
        return f"{name} failed: {tool_failed(result)}"
    return {"similar": _similar, "account": _account, "facts": _facts}[intent](result)


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


fraud_chat_offline = intent_answer(INTENTS, answer)
