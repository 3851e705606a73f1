"""What a claim adds to "Ask the agent" (agents.chat): one read-only tool, get_warranty_claim;
the claim in the conversation's context; and, offline, the question it answers (Chat.offline)."""

from __future__ import annotations

import re

from agents.chat.context import CaseArgs
from agents.chat.offline_domain import intent_answer, tool_call, tool_failed, tool_results
from agents.runtime.tools import Tool
from casework.cases.types import Chat


def get_warranty_claim(args: CaseArgs) -> dict:
    """The claim on a case: product, serial number, defect, months since purchase, the verdict."""
    from tests.sixth_type.models import WarrantyClaim

    claim = WarrantyClaim.objects.select_related("case").filter(case__reference=args.reference.upper()).first()
    if claim is None:
        raise LookupError(f"No warranty claim on case {args.reference!r}.")
    return claim.summary()


def chat_tools() -> tuple:
    return (Tool("get_warranty_claim", "Get the warranty claim on a case: the product, its serial number, the "
                 "defect, the months since purchase and the assessor's verdict.", CaseArgs, get_warranty_claim,
                 consequence="read_only"),)


def chat_context(case) -> dict:
    claim = getattr(case, "warranty_claim", None)
    return {"claim": claim.summary()} if claim is not None else {}


def _answer(intent: str, data: dict, messages):
    results = tool_results(messages, "get_warranty_claim")
    if not results:
        return [tool_call("get_warranty_claim", 1, reference=data["case"]["reference"])]
    if tool_failed(results[-1]):
        return f"get_warranty_claim failed: {tool_failed(results[-1])}"
    claim = results[-1]
    return (f"The claim (from get_warranty_claim): {claim['product']} {claim['serial_number']}, "
            f"{claim['months_since_purchase']} months old, {claim['defect']}; verdict {claim['verdict'] or 'none yet'}.")


CHAT = Chat(tools=chat_tools, context=chat_context,
            offline=intent_answer([("claim", re.compile(r"warrant|claim|serial|defect", re.I))], _answer),
            offline_help="what the claim says")
