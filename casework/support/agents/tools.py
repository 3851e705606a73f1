"""The support tools (seed 001): customer_lookup and find_related_cases (supervisor; the
latter is "Ask the agent"'s read-only tool over casework.entities, the same Tool), kb_search
(each specialist, bound to its own category in code, so a specialist cannot search another's
articles) and ticket_summarize (run directly by the intake step, one call per active ticket).

Handlers read the database through casework.support; none writes.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agents.chat.context import RELATED as FIND_RELATED_CASES  # noqa: F401 - the supervisor's second tool
from agents.runtime.tools import Tool

KB_LIMIT = 5
SUMMARY_CHARS = 400


class CustomerLookupArgs(BaseModel):
    customer_id: str = Field(description="The ticket's customer_id, e.g. CUST-001.")


def customer_lookup(args: CustomerLookupArgs) -> dict:
    """The customer's plan (free/pro/enterprise), tenure in months, seats, region and VIP flag."""
    from casework.support.models import Customer

    customer = Customer.objects.filter(customer_id=args.customer_id.strip()).first()
    if customer is None:
        raise LookupError(f"No customer {args.customer_id!r}.")
    return customer.as_lookup()


CUSTOMER_LOOKUP = Tool(name="customer_lookup", description=customer_lookup.__doc__,
                       parameters=CustomerLookupArgs, handler=customer_lookup, timeout=10,
                       consequence="read_only")


class KBSearchArgs(BaseModel):
    query: str = Field(description="Key terms of the issue in English, e.g. 'double charge refund'.",
                       min_length=1, max_length=300)
    limit: int = Field(default=KB_LIMIT, ge=1, le=10, description="How many articles at most.")


def kb_search_tool(category: str) -> Tool:
    def handler(args: KBSearchArgs) -> dict:
        from casework.support.search import kb_search

        hits = kb_search(args.query, category=category, limit=args.limit)
        return {"category": category, "query": args.query, "results": [h.as_dict() for h in hits]}

    return Tool(name="kb_search", parameters=KBSearchArgs, handler=handler, timeout=10, consequence="read_only",
                description=f"Search the {category} knowledge-base articles. Returns id, title, score (0-1) "
                            "and a snippet of each, best first.")


KB_SEARCH = {category: kb_search_tool(category) for category in ("billing", "technical", "general")}


class TicketSummarizeArgs(BaseModel):
    ticket_id: str = Field(description="An active ticket's id (TKT-XXXXXXXX).")
    customer_id: str = Field(description="Its customer's id.")


def ticket_summarize(args: TicketSummarizeArgs) -> dict:
    """What the matcher sees of an active ticket: its type, urgency and thread, shortened."""
    from casework.support.models import Ticket

    ticket = (Ticket.objects.select_related("customer").prefetch_related("messages")
              .filter(ticket_id=args.ticket_id, customer__customer_id=args.customer_id).first())
    if ticket is None:
        raise LookupError(f"No ticket {args.ticket_id!r} for {args.customer_id!r}.")
    customer_lines = [m.text_en or m.text for m in ticket.messages.all() if m.direction == "customer"]
    first, rest = (customer_lines[0], customer_lines[1:]) if customer_lines else ("", [])
    summary = first[:SUMMARY_CHARS]
    if rest:
        summary += " | latest: " + rest[-1][:SUMMARY_CHARS // 2]
    return {"ticket_id": ticket.ticket_id, "ticket_type": ticket.ticket_type, "urgency": ticket.urgency,
            "opened_at": ticket.created_at.isoformat(), "messages": len(customer_lines), "summary": summary,
            "linked_cases": _linked(ticket)}


def _linked(ticket) -> list[str]:
    """The cases people linked to or merged with this ticket (casework.entities), so the matcher
    knows that a message about "the fraud on my account" belongs with a ticket already tied
    to that fraud alert."""
    from casework.cases.models import Case
    from casework.entities.selectors import related_case_ids

    ids = related_case_ids(ticket.case, limit=5)
    return [f"{c.reference} ({c.get_case_type_display()}, {c.get_status_display()}): {c.title[:80]}"
            for c in Case.objects.filter(pk__in=ids).order_by("-created_at")] if ids else []


TICKET_SUMMARIZE = Tool(name="ticket_summarize", description=ticket_summarize.__doc__,
                        parameters=TicketSummarizeArgs, handler=ticket_summarize, timeout=10,
                        consequence="read_only")
