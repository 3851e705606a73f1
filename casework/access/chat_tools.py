"""What an access change adds to "Ask the agent" (agents.chat), registered on its CaseType
(casework.cases.types.case_type_register_chat): the investigation's own two read tools,
check_authorization (the rights check as of a day) and lookup_data (the change, an employee,
their authorisations, sick leave and vacation, the answers), never send_notification or
generate_report; and the change itself in the conversation's context."""

from __future__ import annotations


def access_chat_tools() -> tuple:
    from casework.access.agents.tools import CHECK_AUTHORIZATION, LOOKUP_DATA

    return (CHECK_AUTHORIZATION, LOOKUP_DATA)


def access_chat_context(case) -> dict:
    from casework.access.agents.tools import mutation_row

    mutation = getattr(case, "access_change", None)
    return {} if mutation is None else {"mutation": mutation_row(mutation)}
