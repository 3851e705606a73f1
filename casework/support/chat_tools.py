"""What a support ticket adds to "Ask the agent" (agents.chat), registered on its CaseType
(casework.cases.types.case_type_register_chat): the triage's read-only customer lookup."""

from __future__ import annotations


def support_chat_tools() -> tuple:
    from casework.support.agents.tools import CUSTOMER_LOOKUP

    return (CUSTOMER_LOOKUP,)
