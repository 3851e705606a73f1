"""The case's agent: one tool-calling agent per case type, with the case's data and results
as fenced context, that case type's read-only tools, and the conversation so far."""

from __future__ import annotations

import functools

from pydantic import BaseModel, Field

from agents.chat.context import tools_for
from agents.runtime.agent import Agent

ASSISTANT_ID = "case_assistant"

PROMPT = """You are the agent of a Casework case, talking with the person who decides it.
The first user message holds the case's data, its agents' results and tool calls. Answer the
person's questions from that data and from your read-only tools; quote the data you rely on.
If the data does not answer a question, say so plainly rather than guess. You recommend;
people decide. Keep answers short: a few sentences or a short list."""


class Answer(BaseModel):
    answer: str = Field(description="The answer to the person's latest question, in plain text.")


@functools.cache
def assistant_agent(case_type: str) -> Agent:
    return Agent(id=ASSISTANT_ID, system_prompt=PROMPT, output_model=Answer, tools=tools_for(case_type),
                 max_tokens=800)
