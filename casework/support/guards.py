"""What code decides about a triage, whatever the models said (DESIGN.md, "Code guards what
agents say"). Each override names its rule and reason; ticket_apply_triage stores it with the
triage (the case page shows it) and audits it (`support.guard_applied`).

  urgency   unknown (the supervisor failed or was not trusted): high until a person triages
            it, never below the high tickets of the queue;
            the seed 001 urgency table is a floor: a model may rank a ticket higher than its
            row, never lower (casework.support.agents.rules.urgency_for, the same
            table the offline supervisor applies);
  action    seed 001's recommended actions as rules: "escalate_human: complex issue, VIP
            customer, or sensitive matter" and "auto_respond: simple question with clear KB
            answer":
            vip           a VIP's ticket is never answered automatically (auto_respond becomes
                          escalate_human, and ticket_auto_send refuses a VIP's ticket whatever
                          SUPPORT_AUTO_SEND says), nor left to a specialist's queue
                          (route_specialist becomes escalate_human);
            sensitive     a security, legal or privacy matter (the customer's messages, by the
                          seed's keyword classes) goes to a person: escalate_human;
            not simple    an automatic answer stands only for a simple question: a ticket about
                          something broken, a billing error or an outage is routed to a
                          specialist instead (the article itself is checked in triage_summary);
  priority  the case's priority follows the urgency, except that a priority a person set
            stands (casework.cases.selectors.agent_priority, as for transactions);
  assignee  an escalation by the agents never reassigns a case a person assigned
            (casework.support.groups.ticket_escalate_to_group).
"""

from __future__ import annotations

from dataclasses import dataclass

from casework.support.agents.rules import COMPLEX, keyword_classes, sensitive_matters, urgency_for
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


def _classes(ticket: Ticket, triage: dict) -> set[str]:
    """The keyword classes of the ticket's customer messages, as written and in English (the
    triage's translation, or one stored earlier)."""
    by_message = (triage.get("translation") or {}).get("by_message") or {}
    texts = []
    for message in ticket.messages.filter(direction="customer"):
        texts += [message.text, by_message.get(str(message.pk)) or message.text_en]
    return keyword_classes("\n".join(t for t in texts if t))


def urgency_table_row(ticket: Ticket, triage: dict) -> tuple[str, str]:
    """The seed's urgency table applied to the ticket's customer messages: (urgency, the row)."""
    return urgency_for(ticket.customer.plan, _classes(ticket, triage))


def _action_override(ticket: Ticket, classes: set[str], action: str) -> Override | None:
    customer = ticket.customer
    if customer.vip and action == "auto_respond":
        return Override("vip_never_auto_sent", "recommended_action", action, "escalate_human",
                        f"{customer.customer_id} is a VIP: a person answers, never an automatic reply.")
    if customer.vip and action != "escalate_human":
        return Override("escalate_vip", "recommended_action", action, "escalate_human",
                        f"{customer.customer_id} is a VIP: seed 001 escalates a VIP customer to a person.")
    sensitive = sensitive_matters(classes)
    if sensitive and action != "escalate_human":
        what = " and ".join(sensitive)
        kind = "legal or privacy" if set(sensitive) & {"legal", "privacy"} else "security"
        return Override("escalate_sensitive", "recommended_action", action, "escalate_human",
                        f"The customer's messages raise a {what} matter: seed 001 escalates a sensitive matter "
                        f"({kind}) to a person.")
    complex_ = sorted(c.replace("_", " ") for c in classes & set(COMPLEX))
    if action == "auto_respond" and complex_:
        return Override("auto_respond_simple_question_only", "recommended_action", action, "route_specialist",
                        f"Not a simple question (the messages are about {', '.join(complex_)}): seed 001 answers "
                        "automatically only a simple question with a clear article.")
    return None


def triage_guard(*, ticket: Ticket, triage: dict, actions: bool = True) -> list[Override]:
    """Apply the rules to a triage's result in place (triage["result"], triage["guards"]);
    returns the overrides. `actions` false: the urgency rules only (a failed triage run
    recommends nothing; its ticket waits for a person)."""
    result = triage.setdefault("result", {})
    overrides: list[Override] = []
    proposed = result.get("urgency") or ""
    if proposed not in URGENCY_RANK:
        overrides.append(Override("urgency_unknown", "urgency", proposed, UNKNOWN_URGENCY,
                                  "No agent assessed the urgency (the triage did not finish): high until a "
                                  "person triages it."))
        result["urgency"] = UNKNOWN_URGENCY
    classes = _classes(ticket, triage)
    floor, row = urgency_for(ticket.customer.plan, classes)
    if row != NO_ROW and URGENCY_RANK[floor] < URGENCY_RANK[result["urgency"]]:
        overrides.append(Override("urgency_floor", "urgency", result["urgency"], floor,
                                  f"The seed's urgency table says at least {floor} (\"{row}\")."))
        result["urgency"] = floor
    action = _action_override(ticket, classes, result.get("recommended_action") or "") if actions else None
    if action is not None:
        overrides.append(action)
        result["recommended_action"] = action.decided
    note_overrides(triage, overrides)
    return overrides


def note_overrides(triage: dict, overrides: list[Override]) -> None:
    """Add the overrides to the triage as stored (its guard lines, which the case page shows)."""
    guards = triage.setdefault("guards", [])
    for o in overrides:
        guards.append(f"{o.field.replace('_', ' ').capitalize()} {o.proposed or 'unknown'} → {o.decided}: {o.reason}")
    triage["overrides"] = [*triage.get("overrides", []), *(o.as_dict() for o in overrides)]


def triage_priority(*, ticket: Ticket, urgency: str) -> tuple[str | None, Override | None]:
    """The case priority the triage's urgency sets (None: unchanged), and the override when a
    person's priority stands against it."""
    from casework.cases.selectors import agent_priority

    priority, person = agent_priority(ticket.case, urgency)
    if person:
        return None, Override("person_priority_stands", "priority", urgency, ticket.case.priority,
                              f"{person} set the priority to {ticket.case.priority}; the agents do not overwrite "
                              f"a person's priority (the triage assessed {urgency} urgency).")
    return priority, None
