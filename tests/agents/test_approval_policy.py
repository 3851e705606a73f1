"""Issue 46: every tool declares its consequence, and which "acts" calls wait for a person is
decided per tool and case type (the admin's row, then AGENT_APPROVALS, then "always")."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from pydantic import BaseModel

from agents.approvals.checks import tool_consequences_check, tools_registered
from agents.models import ApprovalPolicy
from agents.runtime.approval import policy_load
from agents.runtime.tools import CONSEQUENCES, Tool


class Args(BaseModel):
    amount: float | None = None


def tool(name: str, consequence: str) -> Tool:
    return Tool(name, f"The {name} tool.", Args, lambda args: {}, consequence=consequence)


BLOCK = tool("request_card_block", "acts")


def test_a_tool_cannot_be_built_without_declaring_its_consequence():
    with pytest.raises(ValueError, match="must declare its consequence"):
        Tool("mystery", "Does something.", Args, lambda args: {})
    with pytest.raises(ValueError, match="read_only, drafts, acts"):
        Tool("mystery", "Does something.", Args, lambda args: {}, consequence="maybe")


@pytest.mark.django_db
def test_every_registered_tool_declares_one_and_every_acting_tool_waits_by_default(settings):
    found = tools_registered()
    assert any(where.startswith("pipeline:") for where in found) and any(w.startswith("chat:") for w in found)
    tools = [t for entries in found.values() for _, t in entries]
    assert tools and all(t.consequence in CONSEQUENCES for t in tools)
    acting = {t.name for t in tools if t.acts}
    assert "send_notification" in acting  # e-mails the employee, asks the manager
    assert {"lookup_data", "check_authorization", "customer_lookup", "kb_search"} <= {
        t.name for t in tools if t.consequence == "read_only"}
    policies = policy_load("access_change")
    assert all(policies.rule_for(name)[0] == {"mode": "always"} for name in acting)
    # "Ask the agent" has no approval step: read-only tools only.
    assert all(t.consequence == "read_only" for where, entries in found.items() if where.startswith("chat:")
               for _, t in entries)
    assert tool_consequences_check() == []


def test_the_check_names_an_acting_tool_let_through_and_a_malformed_rule(settings):
    settings.AGENT_APPROVALS = {"send_notification": {"*": "never"}, "nobody_calls_me": {"*": "sometimes"}}
    ids = sorted(m.id for m in tool_consequences_check())
    assert ids == ["agents.E103", "agents.W101", "agents.W102"]


@pytest.mark.django_db
def test_the_admins_row_beats_the_settings_which_beat_the_default(settings):
    settings.AGENT_APPROVALS = {"request_card_block": {"fraud_alert": "never", "*": {"mode": "above",
                                                                                    "argument": "amount",
                                                                                    "threshold": 500}}}
    assert policy_load("fraud_alert").decide(BLOCK, {"amount": 10_000}).needed is False  # settings, its type
    other = policy_load("support_ticket")
    assert other.decide(BLOCK, {"amount": 499}).needed is False  # settings, "*": below the threshold
    assert other.decide(BLOCK, {"amount": 501}).needed is True
    assert other.decide(BLOCK, {}).needed is True  # the rule cannot tell: a person does
    assert other.decide(BLOCK, {"amount": "lots"}).needed is True
    assert policy_load("support_ticket").decide(tool("email_customer", "acts"), {}).rule == "always (default)"

    ApprovalPolicy.objects.create(tool="request_card_block", case_type="fraud_alert", mode="always")
    decision = policy_load("fraud_alert").decide(BLOCK, {"amount": 1})
    assert decision.needed is True and decision.rule == "always (admin)"
    ApprovalPolicy.objects.create(tool="request_card_block", case_type="", mode="never")
    assert policy_load("support_ticket").decide(BLOCK, {"amount": 10_000}).rule == "never (admin)"
    # Reading and drafting never wait, whatever the rules say.
    settings.AGENT_APPROVALS = {"draft": {"*": "always"}}
    assert policy_load("").decide(tool("draft", "drafts"), {}).needed is False


@pytest.mark.django_db
def test_an_admin_threshold_needs_its_argument_and_number():
    with pytest.raises(ValidationError) as refused:
        ApprovalPolicy(tool="request_card_block", mode="above").full_clean()
    assert {"argument", "threshold"} <= set(refused.value.message_dict)
