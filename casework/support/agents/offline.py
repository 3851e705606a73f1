"""Offline analysts for the support agents: deterministic, pure functions of their input
and the conversation (tool results come back in the messages, fenced like case data).

They cannot translate: the translator detects the language (lingua) and leaves
translated_messages empty for a non-English ticket, which the page shows as "not translated
(no language model configured)" and which keeps the ticket from being auto-answered.
"""

from __future__ import annotations

import re

from agents.llm.offline_registry import offline_analyst, readable_error, tool_call, tool_failed, tool_results
from casework.support.agents import rules
from casework.support.agents.language import detect_language
from casework.support.agents.replies import reply_for

# kb_search's score: 0.25 is a quarter of the query's terms in the title, or half in the body.
AUTO_RESPOND_MIN_SCORE = 0.25
_TICKET_ID = re.compile(r"\bTKT-[A-Z0-9]{8}\b")





# --- ticket matcher ---------------------------------------------------------------------

@offline_analyst("ticket_matcher")
def ticket_matcher(data: dict) -> dict:
    """A ticket id quoted in the message is a high-confidence match; otherwise the shared
    vocabulary of the message and each ticket's summary (and the same kind of issue)."""
    tickets = data.get("activated_tickets") or []
    message = data.get("new_message", "")
    known = {t["ticket_id"] for t in tickets}
    quoted = [t for t in _TICKET_ID.findall(message.upper()) if t in known]
    if quoted:
        return {"matched_ticket_id": quoted[0], "confidence": "high"}
    new_type = rules.ticket_type_for(rules.keyword_classes(message))
    best, best_score = None, 0.0
    for ticket in tickets:
        score = rules.match_score(message, ticket.get("summary", ""))
        if ticket.get("ticket_type") == new_type and new_type != "general":
            score += 0.15
        if score > best_score:
            best, best_score = ticket["ticket_id"], score
    if best is None:
        return {"matched_ticket_id": None, "confidence": "low"}
    confidence = "high" if best_score >= 0.5 else "medium" if best_score >= 0.3 else "low"
    return {"matched_ticket_id": best if confidence != "low" else None, "confidence": confidence}


# --- translator -------------------------------------------------------------------------

@offline_analyst("support_translator")
def translator(data: dict) -> dict:
    messages = [str(m) for m in data.get("messages") or []]
    language = detect_language("\n".join(messages))
    english = language == "en"
    return {"original_language": language, "is_english": english,
            "translated_messages": list(messages) if english else [], "original_messages": messages}


@offline_analyst("support_reply_translator")
def reply_translator(data: dict) -> dict:
    """Cannot translate: the reply goes as written, and says so (translated false). Its English
    is given only when it is English already."""
    reply = str(data.get("reply") or "")
    language = detect_language(reply)
    return {"language": language, "reply": reply, "reply_en": reply if language == "en" else "", "translated": False}


# --- supervisor -------------------------------------------------------------------------

_URGENCY_ORDER = ("low", "medium", "high", "critical")


def _fraud_ties(related) -> tuple[str, bool]:
    """(what find_related_cases says ties this ticket to confirmed fraud, "" if nothing; and
    whether the tool failed)."""
    if related is None:
        return "", False
    if tool_failed(related) or not isinstance(related, dict):
        return "", True
    ties = [f"linked to {c['reference']} ({c['type'].replace('_', ' ')}), decided {c.get('decision') or 'as fraud'}"
            for c in related.get("linked") or [] if isinstance(c, dict) and c.get("confirms_fraud")]
    ties += [f"its {e['kind']} {e['value']} is tied to confirmed fraud"
             + (f" ({', '.join(c['reference'] for c in e.get('other_cases') or [] if c.get('confirms_fraud'))})"
                if any(c.get("confirms_fraud") for c in e.get("other_cases") or []) else "")
             for e in related.get("entities") or [] if isinstance(e, dict) and e.get("confirmed_fraud")]
    return "; ".join(ties[:3]), False


@offline_analyst("support_supervisor")
def supervisor(data: dict, messages=None):
    """The urgency table, and what find_related_cases says: a ticket linked to a case decided as
    confirmed fraud, or naming an entity confirmed in fraud, goes to a person (high at least)."""
    seen = tool_results(messages)
    reference = data.get("case_reference")
    if "customer_lookup" not in seen:
        calls = [tool_call("customer_lookup", 1, customer_id=data["customer_id"])]
        if reference:
            calls.append(tool_call("find_related_cases", 2, reference=reference))
        return calls
    customer = seen["customer_lookup"][-1]
    if tool_failed(customer):
        customer = {"plan": "unknown"}
    fraud, related_failed = _fraud_ties((seen.get("find_related_cases") or [None])[-1])
    text = "\n".join(data.get("messages") or [])
    classes = rules.keyword_classes(text)
    urgency, row = rules.urgency_for(customer.get("plan", ""), classes)
    if fraud and _URGENCY_ORDER.index(urgency) < _URGENCY_ORDER.index("high"):
        urgency = "high"
    ticket_type = rules.ticket_type_for(classes)
    escalate = urgency == "critical" or bool(rules.sensitive_matters(classes)) or bool(fraud)
    who = (f"{customer['plan'].capitalize()} customer ({customer.get('tenure_months', '?')} months, "
           f"{customer.get('seats', '?')} seats, {customer.get('region') or 'no region'})"
           if customer.get("plan") != "unknown" else "A customer the customer records do not know")
    about = ", ".join(sorted(c.replace("_", " ") for c in classes - {"angry", "question"}))
    about = f"the message is about {about}" if about else "the message has no recognised issue keywords"
    if fraud:
        why = f"tied to confirmed fraud: {fraud}."
    elif "legal" in classes:
        why = "legal threat."
    elif "privacy" in classes:
        why = "a privacy matter."
    else:
        why = "critical issue."
    reasoning = (f"{who}; {about}. Urgency {urgency}, from the table's row \"{row}\""
                 + (" raised to high: the ticket is tied to confirmed fraud" if fraud and row and urgency == "high"
                    and rules.urgency_for(customer.get("plan", ""), classes)[0] != "high" else "") + ". "
                 + (f"Direct escalation: {why}" if escalate else f"Routed to the {ticket_type} specialist.")
                 + (" (The related cases could not be read.)" if related_failed else ""))
    return {"urgency": urgency, "ticket_type": ticket_type, "reasoning": reasoning, "requires_escalation": escalate}


# --- specialists ------------------------------------------------------------------------

def _query(data: dict, classes: set[str], area: str) -> str:
    terms: list[str] = []
    for name in ("security", "outage", "billing_error", "disruption", area):
        if name in classes and name in rules.SEARCH_TERMS:
            terms += rules.SEARCH_TERMS[name].split()
    if data.get("is_english") or data.get("translation_available"):
        words = sorted(rules.content_words(" ".join(data.get("messages") or [])), key=lambda w: (-len(w), w))
        terms += words[:8]
    seen: list[str] = []
    for term in terms:
        if term not in seen:
            seen.append(term)
    return " ".join(seen[:14]) or area


def _specialist(area: str):
    def analyst(data: dict, messages=None):
        text = "\n".join(data.get("messages") or [])
        classes = rules.keyword_classes(text + "\n" + "\n".join(data.get("original_messages") or []))
        seen = tool_results(messages)
        if "kb_search" not in seen:
            return [tool_call("kb_search", 1, query=_query(data, classes, area))]
        result = seen["kb_search"][-1]
        kb_failed = tool_failed(result)
        hits = [] if kb_failed else result.get("results", [])
        supervisor = data.get("supervisor_decision") or {}
        customer = data.get("customer") or {}
        urgency = supervisor.get("urgency") or rules.urgency_for(customer.get("plan", ""), classes)[0]
        language = data.get("language") or "en"
        readable = data.get("is_english") or data.get("translation_available")
        top = hits[0] if hits else None
        simple = rules.is_simple_question(classes)
        sensitive = rules.sensitive_matters(classes)
        if customer.get("vip") or sensitive:
            action = "escalate_human"
            why = "VIP customer" if customer.get("vip") else f"a sensitive matter ({' and '.join(sensitive)})"
            reasoning = f"Escalated to a person: {why}."
        elif kb_failed:
            action, reasoning = "route_specialist", f"The knowledge-base search failed ({readable_error(result['message'])[:120]})."
        elif not hits:
            action, reasoning = "route_specialist", "No knowledge-base article matches this issue."
        elif not readable:
            action, reasoning = "route_specialist", (
                f"The ticket is in {language} and could not be translated, so no answer is sent automatically.")
        elif urgency in ("critical", "high"):
            action, reasoning = "route_specialist", f"Urgency {urgency}: a specialist should handle it."
        elif simple and top["score"] >= AUTO_RESPOND_MIN_SCORE:
            action, reasoning = "auto_respond", (
                f"A simple question that the help article \"{top['title']}\" ({top['id']}) answers "
                f"(match score {top['score']:.2f}).")
        else:
            action, reasoning = "route_specialist", "Needs a specialist's attention beyond the articles found."
        return {
            "urgency": urgency,
            "extracted_info": {"product_area": area, "issue_type": rules.issue_type_for(classes, area),
                               "sentiment": rules.sentiment_for(classes), "language": language},
            "recommended_action": action,
            "suggested_response": reply_for(action, language=language, area=area, article=top,
                                            name=customer.get("name", "")),
            "relevant_articles": [h["id"] for h in hits[:3]],
            "reasoning": reasoning,
        }

    analyst.__name__ = f"{area}_specialist"
    return analyst


for _area in ("billing", "technical", "general"):
    offline_analyst(f"support_{_area}")(_specialist(_area))
