"""Which tool calls wait for a person's approval (issue 46).

Only a tool whose consequence is "acts" (it talks to a person or a system outside Casework)
can need one. Its rule, per tool and case type, is the first of:
  1. an admin's ApprovalPolicy row for (tool, case type), then for (tool, every case type);
  2. AGENT_APPROVALS[tool][case type], then AGENT_APPROVALS[tool]["*"];
  3. "always": anything that contacts a customer, an employee or a bank system waits for a
     person until someone decides otherwise.
A rule is "always", "never", or {"mode": "above", "argument": name, "threshold": n}: the call
waits when that argument is above n (a missing or non-numeric argument waits too: the rule
cannot tell, so a person does).

`policy_load()` reads the admin's rows once (a step's worth of calls share them, and the
decision itself then needs no database: it is taken on the event loop, in the tool loop).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.conf import settings

from agents.runtime.tools import Tool

ALWAYS, ABOVE, NEVER = "always", "above", "never"


@dataclass(frozen=True)
class Decision:
    needed: bool
    # The rule that decided, in words, kept with the pause ("always (settings)").
    rule: str


@dataclass(frozen=True)
class ApprovalPolicies:
    """The rules in force for one case type: the admin's rows read once, the settings'."""

    case_type: str
    overrides: dict[tuple[str, str], dict]

    def rule_for(self, tool_name: str) -> tuple[dict, str]:
        for key in ((tool_name, self.case_type), (tool_name, "")):
            if key in self.overrides:
                return self.overrides[key], "admin"
        configured = settings.AGENT_APPROVALS.get(tool_name) or {}
        for key in (self.case_type, "*"):
            if key and key in configured:
                return rule_parse(configured[key]), "settings"
        return {"mode": ALWAYS}, "default"

    def decide(self, tool: Tool, arguments: dict) -> Decision:
        if not tool.acts:
            return Decision(False, f"{tool.consequence}: no approval")
        rule, source = self.rule_for(tool.name)
        mode = rule["mode"]
        if mode == NEVER:
            return Decision(False, f"never ({source})")
        if mode == ABOVE:
            value = _number(arguments.get(rule["argument"]))
            said = f"above: {rule['argument']} > {rule['threshold']:g} ({source})"
            return Decision(value is None or value > Decimal(str(rule["threshold"])), said)
        return Decision(True, f"always ({source})")


def rule_parse(value) -> dict:
    """A rule as AGENT_APPROVALS writes it, checked: a bad one raises ValueError."""
    if value in (ALWAYS, NEVER):
        return {"mode": value}
    if isinstance(value, dict) and value.get("mode") in (ALWAYS, NEVER):
        return {"mode": value["mode"]}
    if isinstance(value, dict) and value.get("mode") == ABOVE and value.get("argument") and \
            _number(value.get("threshold")) is not None:
        return {"mode": ABOVE, "argument": str(value["argument"]), "threshold": float(value["threshold"])}
    raise ValueError(f"An approval rule is 'always', 'never' or {{'mode': 'above', 'argument': ..., "
                     f"'threshold': n}}, not {value!r}.")


def _number(value) -> Decimal | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None


def policy_load(case_type: str) -> ApprovalPolicies:
    """The rules for a case type, with the admin's rows for it (and for every type) read now."""
    from agents.models import ApprovalPolicy

    rows = ApprovalPolicy.objects.filter(case_type__in=[case_type, ""]) if case_type else \
        ApprovalPolicy.objects.filter(case_type="")
    return ApprovalPolicies(case_type=case_type or "",
                            overrides={(row.tool, row.case_type): row.as_rule() for row in rows})
