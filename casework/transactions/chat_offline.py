"""The offline assistant's questions the investigation's read-only tools answer
(casework/transactions/chat_tools.py): the card's transactions, the investigation's record.
Registered as Chat.offline."""

from __future__ import annotations

import re

from agents.chat.offline_domain import intent_answer, tool_call, tool_failed, tool_results

INTENTS = [
    ("card", re.compile(r"transactions|\bcard\b|purchases|spending", re.I)),
    ("record", re.compile(r"insights?|hypothes|evidence|executions?|recommendations?|planner", re.I)),
]


def answer(intent: str, data: dict, messages):
    """A list of tool calls to make, or the answer's text once their results are in."""
    name = "get_card_transactions" if intent == "card" else "get_investigation_record"
    results = tool_results(messages, name)
    if not results:
        return [tool_call(name, 1, reference=data["case"]["reference"], **({"limit": 10} if intent == "card" else {}))]
    if tool_failed(results[-1]):
        return f"{name} failed: {tool_failed(results[-1])}"
    return (_card if intent == "card" else _record)(results[-1])


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


transaction_chat_offline = intent_answer(INTENTS, answer)
