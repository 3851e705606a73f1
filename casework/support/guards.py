"""What code decides about a triage, whatever the models said (DESIGN.md, "Code guards what
agents say"). Each override names its rule and reason; ticket_apply_triage stores it with the
triage (the case page shows it) and audits it (`support.guard_applied`).

  urgency   unknown (the supervisor failed or was not trusted): high until a person triages
            it, never below the high tickets of the queue;
            the seed 001 urgency table is a floor: a model may rank a ticket higher than its
            row, never lower (casework.support.agents.rules.urgency_for, the same
            table the offline supervisor applies);
  vip       a VIP's ticket is never answered automatically: auto_respond becomes
            escalate_human (seed 001: "VIP customer" -> escalate_human), and ticket_auto_send
            refuses a VIP's ticket whatever SUPPORT_AUTO_SEND says.
"""

from __future__ import annotations

from dataclasses import dataclass

from casework.support.agents.rules import keyword_classes, urgency_for
from casework.support.models import URGENCY_RANK, Ticket

NO_ROW = "No row of the table applies"
UNKNOWN_URGENCY = "high"


@dataclass(frozen=True)
class Override:
    rule: str
    field: str
    proposed: str
    decided: str
    reason: str

    def as_dict(self) -> dict:
        return {"rule": self.rule, "field": self.field, "proposed": self.proposed, "decided": self.decided,
                "reason": self.reason}


def urgency_table_row(ticket: Ticket, triage: dict) -> tuple[str, str]:
    """The seed's urgency table applied to the ticket's customer messages, as written and in
    English (the triage's translation, or one stored earlier): (urgency, the row)."""
    by_message = (triage.get("translation") or {}).get("by_message") or {}
    texts = []
    for message in ticket.messages.filter(direction="customer"):
        texts += [message.text, by_message.get(str(message.pk)) or message.text_en]
    return urgency_for(ticket.customer.plan, keyword_classes("\n".join(t for t in texts if t)))


def triage_guard(*, ticket: Ticket, triage: dict) -> list[Override]:
    """Apply the rules to a triage's result in place (triage["result"], triage["guards"]);
    returns the overrides."""
    result = triage.setdefault("result", {})
    overrides: list[Override] = []
    proposed = result.get("urgency") or ""
    if proposed not in URGENCY_RANK:
        overrides.append(Override("urgency_unknown", "urgency", proposed, UNKNOWN_URGENCY,
                                  "No agent assessed the urgency (the triage did not finish): high until a "
                                  "person triages it."))
        result["urgency"] = UNKNOWN_URGENCY
    floor, row = urgency_table_row(ticket, triage)
    if row != NO_ROW and URGENCY_RANK[floor] < URGENCY_RANK[result["urgency"]]:
        overrides.append(Override("urgency_floor", "urgency", result["urgency"], floor,
                                  f"The seed's urgency table says at least {floor} (\"{row}\")."))
        result["urgency"] = floor
    if ticket.customer.vip and result.get("recommended_action") == "auto_respond":
        overrides.append(Override("vip_never_auto_sent", "recommended_action", "auto_respond", "escalate_human",
                                  f"{ticket.customer.customer_id} is a VIP: a person answers, never an automatic "
                                  "reply."))
        result["recommended_action"] = "escalate_human"
    guards = triage.setdefault("guards", [])
    for o in overrides:
        guards.append(f"{o.field.replace('_', ' ').capitalize()} {o.proposed or 'unknown'} → {o.decided}: {o.reason}")
    triage["overrides"] = [*triage.get("overrides", []), *(o.as_dict() for o in overrides)]
    return overrides
