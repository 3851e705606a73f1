"""Output models of the support agents, with the seed's names and enums (seed 001)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Urgency = Literal["critical", "high", "medium", "low"]
TicketType = Literal["billing", "technical", "general"]
Action = Literal["auto_respond", "route_specialist", "escalate_human"]


class TicketMatch(BaseModel):
    matched_ticket_id: str | None = Field(
        default=None, description="The id (TKT-XXXXXXXX) of the active ticket this message continues, or null.")
    confidence: Literal["high", "medium", "low"] = Field(
        description="high: clearly the same issue; medium: probably; low: unrelated or unsure.")


class TranslationResult(BaseModel):
    original_language: str = Field(description="ISO 639-1 code of the customer's language, e.g. en, es, th.")
    is_english: bool = Field(description="Whether the ticket is written in English.")
    translated_messages: list[str] = Field(
        description="Each customer message in English, in order; the same text when already English.")
    original_messages: list[str] = Field(description="Each customer message as written, in order.")


class SupervisorDecision(BaseModel):
    urgency: Urgency = Field(description="From the urgency table: security first; unlisted combinations medium.")
    ticket_type: TicketType = Field(description="Which specialist handles it.")
    reasoning: str = Field(description="One or two sentences: the customer's plan and what the issue is.")
    requires_escalation: bool = Field(description="True sends the ticket straight to a person, no specialist.")


class ExtractedInfo(BaseModel):
    product_area: str = Field(description="billing, technical or general, or a finer area such as invoices.")
    issue_type: str = Field(description="snake_case kind of issue, e.g. refund_request, login_failure.")
    sentiment: str = Field(description="e.g. calm, confused, frustrated, angry, urgent.")
    language: str = Field(description="ISO 639-1 code of the customer's language.")


class TriageResult(BaseModel):
    urgency: Urgency = Field(description="The ticket's urgency (the supervisor's, unless you have reason to differ).")
    extracted_info: ExtractedInfo
    recommended_action: Action = Field(description=(
        "auto_respond: a simple question a knowledge-base article answers fully; route_specialist: needs a "
        "human specialist; escalate_human: complex, VIP customer, or a sensitive matter."))
    suggested_response: str = Field(description="The reply to send, in the customer's language.")
    relevant_articles: list[str] = Field(description="Ids of the kb_search articles the reply relies on (kb_002).")
    reasoning: str = Field(description="Why this action, in one to three sentences.")


class ReplyTranslation(BaseModel):
    language: str = Field(description="ISO 639-1 code of the language `reply` is in (the customer's).")
    reply: str = Field(description="The agent's reply in the customer's language; the same text when it already is.")
    reply_en: str = Field(description="The reply in English, for the agent; the same text when it already is.")
    translated: bool = Field(description="True when you translated the reply (it was not in the customer's language).")
