"""The support agents of seed 001 as plain objects.

    schemas.py   output models (names and enums as the seed gives them)
    prompts.py   system prompts, the urgency table included
    tools.py     customer_lookup, find_related_cases, kb_search (one per category), ticket_summarize
    rules.py     keyword classes, the urgency table, matching (for the offline analysts)
    language.py  language detection (lingua), built once per process
    replies.py   template replies per language (offline)
    offline.py   the offline analysts, registered on import
"""

from __future__ import annotations

from agents.runtime.agent import Agent
from casework.support.agents import offline  # noqa: F401  (registers the offline analysts)
from casework.support.agents.prompts import PROMPTS
from casework.support.agents.schemas import (
    ReplyTranslation,
    SupervisorDecision,
    TicketMatch,
    TranslationResult,
    TriageResult,
)
from casework.support.agents.tools import CUSTOMER_LOOKUP, FIND_RELATED_CASES, KB_SEARCH, TICKET_SUMMARIZE

TICKET_MATCHER = Agent(id="ticket_matcher", system_prompt=PROMPTS["ticket_matcher"], output_model=TicketMatch,
                       max_tokens=200)
TRANSLATOR = Agent(id="support_translator", system_prompt=PROMPTS["translator"], output_model=TranslationResult,
                   max_tokens=2000)
# The outbound side (issue 25.3): a person's reply in the customer's language, English beside it.
REPLY_TRANSLATOR = Agent(id="support_reply_translator", system_prompt=PROMPTS["reply_translator"],
                         output_model=ReplyTranslation, max_tokens=2000)
SUPERVISOR = Agent(id="support_supervisor", system_prompt=PROMPTS["supervisor"], output_model=SupervisorDecision,
                   tools=(CUSTOMER_LOOKUP, FIND_RELATED_CASES), max_tokens=500)
SPECIALISTS = {
    area: Agent(id=f"support_{area}", system_prompt=PROMPTS[area], output_model=TriageResult, tools=(KB_SEARCH[area],),
                max_tokens=1200)
    for area in ("billing", "technical", "general")
}

# Keyed by the short names the run's results use (the agent ids carry a support_ prefix).
SUPPORT_AGENTS: dict[str, Agent] = {"ticket_matcher": TICKET_MATCHER, "translator": TRANSLATOR,
                                    "supervisor": SUPERVISOR, **SPECIALISTS}

__all__ = ["REPLY_TRANSLATOR", "SUPPORT_AGENTS", "SPECIALISTS", "SUPERVISOR", "TICKET_MATCHER", "TICKET_SUMMARIZE", "TRANSLATOR", "PROMPTS"]
