"""Support tickets (seed 001): intake (ticket matching) and triage, as plans chosen at run time.

Mode "intake" starts without a case (the message's ticket is not known yet):
  1. ticket_summarize, run directly, once per active ticket of the customer (none: skip to 3);
  2. ticket_matcher on the new message and those summaries;
  3. finish: casework.support.services.intake_resolve accepts the match only at high/medium
     confidence and only for one of the customer's active tickets (the code checks, never the
     model), else opens a new ticket; the run is attached to the ticket's case, and a triage
     run is enqueued on it. A failed matcher opens a new ticket.
Mode "reply" translates a person's reply to a non-English customer (reply_translator), then
queues its email (casework.support.services.reply_translation_apply).
Mode "triage" reads the whole thread of a ticket:
  1. translator;  2. supervisor (calls customer_lookup and find_related_cases: a ticket tied
     to confirmed fraud goes to a person);
  3. routing, read from the supervisor's saved output: requires_escalation -> the direct
     escalation (no LLM; a step with no calls that saves its result in the state), else the
     billing / technical / general specialist (calls kb_search in its own category);
  4. finish: the triage (triage_summary) is stored through ticket_apply_triage.
Failures: a failed translator continues on the originals; a failed supervisor or specialist
becomes route_specialist with the failure named and the triage marked incomplete (the ticket:
triage failed); a failed kb_search gives no articles. None of those tickets is auto-answered,
whatever a model recommends (guards in triage_summary; the urgency floor, unknown urgency and
VIP rules in casework.support.guards). A triage run that raises marks its ticket's triage
failed (on_failed), so it waits in the queue for a person.
"""

from __future__ import annotations

from agents.models import AgentCall
from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Step, register_pipeline
from casework.support.agents import (
    REPLY_TRANSLATOR,
    SPECIALISTS,
    SUPERVISOR,
    TICKET_MATCHER,
    TICKET_SUMMARIZE,
    TRANSLATOR,
)

PIPELINE = "support"
AREAS = ("billing", "technical", "general")


# --- intake -----------------------------------------------------------------------------

def _intake_plan(ctx: RunContext) -> Step | None:
    tickets = ctx.state.get("input_active_tickets") or []
    customer_id = ctx.state["input_customer_id"]
    if not tickets:
        return None
    if not any(f"summary:{t}" in ctx.results for t in tickets):
        return Step("ticket_summarize", [
            CallSpec(f"summary:{t}", tool=TICKET_SUMMARIZE, input={"ticket_id": t, "customer_id": customer_id})
            for t in tickets], index=0)
    if "ticket_matcher" in ctx.results:
        return None
    summaries = [s for t in tickets if (s := ctx.output(f"summary:{t}"))]
    if not summaries:
        return None
    return Step("ticket_matcher", [CallSpec("ticket_matcher", TICKET_MATCHER, {
        "customer_id": customer_id, "new_message": ctx.state["input_message"], "activated_tickets": summaries})],
        index=1)


def _intake_prepare(ctx: RunContext) -> None:
    from casework.support.selectors import active_ticket_ids

    ctx.state["input_active_tickets"] = active_ticket_ids(ctx.state["input_customer_id"])


def _intake_finish(ctx: RunContext) -> None:
    from agents.services import run_attach_case
    from casework.support.services import intake_resolve

    if ctx.run.case_id is not None:
        return
    matcher = ctx.results.get("ticket_matcher")
    if not ctx.state.get("input_active_tickets"):
        note = "The customer has no active ticket."
    elif matcher is None:
        note = "No active ticket could be summarised." if not ctx.stop_reason else f"Stopped ({ctx.stop_reason})."
    elif matcher.get("error"):
        note = f"The ticket matcher failed ({matcher['error'][:200]}); a new ticket was opened."
    else:
        note = ""
    ticket, matched = intake_resolve(
        actor="agent:ticket_matcher", customer_id=ctx.state["input_customer_id"], message=ctx.state["input_message"],
        channel=ctx.state.get("input_channel", "api"), match=ctx.output("ticket_matcher"), note=note,
        intake_run=ctx.run.pk, email=ctx.state.get("input_email"))
    run_attach_case(actor="system", run=ctx.run, case=ticket.case)
    ctx.state.update(ticket_id=ticket.ticket_id, matched=matched, match_note=note)


# --- triage -----------------------------------------------------------------------------

def _triage_prepare(ctx: RunContext) -> None:
    from casework.support.agents.language import warm_up

    # The offline translator detects the language on the event loop; the detector's models
    # load on first use (about 3 s), so load them here, on this run's own thread, instead.
    warm_up()
    ticket = ctx.case.support_ticket
    ctx.state["input_ticket_id"] = ticket.ticket_id
    ctx.state["input_customer"] = ticket.customer.as_lookup()
    ctx.state["input_thread"] = [
        {"id": m.pk, "direction": m.direction, "text": m.text, "at": m.created_at.isoformat()}
        for m in ticket.messages.all()]


def _customer_messages(ctx: RunContext) -> list[dict]:
    return [m for m in ctx.state["input_thread"] if m["direction"] == "customer"]


def translation_of(ctx: RunContext) -> dict:
    """What the translator gave, and whether the English text can be relied on."""
    originals = [m["text"] for m in _customer_messages(ctx)]
    entry = ctx.results.get("translator") or {}
    out = ctx.output("translator")
    if out is None:
        return {"status": "failed", "error": entry.get("error", ""), "original_language": "", "is_english": False,
                "available": False, "messages": originals, "by_message": {}}
    translated = out.get("translated_messages") or []
    if out["is_english"]:
        status, available = "english", True
    elif len(translated) == len(originals) and any(t.strip() for t in translated):
        status, available = "translated", True
    else:
        status, available = ("not_translated_offline" if ctx.run.provider == "offline" else "not_translated"), False
    by_message = ({str(m["id"]): t for m, t in zip(_customer_messages(ctx), translated, strict=True)}
                  if status == "translated" else {})
    return {"status": status, "error": "", "original_language": out["original_language"],
            "is_english": out["is_english"], "available": available,
            "messages": translated if available and status == "translated" else originals, "by_message": by_message}


def _triage_plan(ctx: RunContext) -> Step | None:
    ticket_id = ctx.state["input_ticket_id"]
    customer = ctx.state["input_customer"]
    if "translator" not in ctx.results:
        return Step("translator", [CallSpec("translator", TRANSLATOR, {
            "ticket_id": ticket_id, "messages": [m["text"] for m in _customer_messages(ctx)]})], index=0)
    translation = translation_of(ctx)
    if "supervisor" not in ctx.results:
        return Step("supervisor", [CallSpec("supervisor", SUPERVISOR, {
            "ticket_id": ticket_id, "customer_id": customer["customer_id"], "case_reference": ctx.case.reference,
            "original_language": translation["original_language"], "is_english": translation["is_english"],
            "translation_available": translation["available"], "messages": translation["messages"]})], index=1)
    decision = trusted_decision(ctx)
    if decision is None:
        return None
    if decision["requires_escalation"]:
        if "escalation" in ctx.state:
            return None
        return Step("escalate", [], index=2, state={"escalation": _direct_escalation(decision, translation)})
    area = decision["ticket_type"]
    if area in ctx.results:
        return None
    return Step(area, [CallSpec(area, SPECIALISTS[area], {
        "ticket_id": ticket_id, "customer": customer, "language": translation["original_language"] or "en",
        "is_english": translation["is_english"], "translation_available": translation["available"],
        "messages": translation["messages"], "original_messages": [m["text"] for m in _customer_messages(ctx)],
        "supervisor_decision": decision})], index=2)


def _direct_escalation(decision: dict, translation: dict) -> dict:
    """The seed's escalate node: no LLM, a TriageResult straight from the supervisor's decision."""
    return {"urgency": decision["urgency"],
            "extracted_info": {"product_area": decision["ticket_type"], "issue_type": "escalation",
                               "sentiment": "urgent", "language": translation["original_language"] or "en"},
            "recommended_action": "escalate_human", "suggested_response": "", "relevant_articles": [],
            "reasoning": f"Direct escalation required - {decision['reasoning']}"}


def trusted_decision(ctx: RunContext) -> dict | None:
    """The supervisor's decision, unless it looked up a customer other than the ticket's (a
    message can try to pass for a bigger customer), or the related cases of a case other than
    the ticket's (one could pass for a ticket with no fraud behind it): then it is not used,
    and the ticket goes to a person like a failed supervisor's."""
    decision = ctx.output("supervisor")
    if decision is None:
        return None
    own = ctx.state["input_customer"]["customer_id"]
    own_case = ctx.case.reference
    asked: dict[str, set[str]] = {"customer_lookup": set(), "find_related_cases": set()}
    for name, tool_input in AgentCall.objects.filter(run=ctx.run, kind=AgentCall.Kind.TOOL,
                                                     name__in=list(asked)).values_list("name", "input"):
        key = "customer_id" if name == "customer_lookup" else "reference"
        asked[name].add(str((tool_input or {}).get(key, "")).strip().upper() if name != "customer_lookup"
                        else str((tool_input or {}).get(key)))
    others = sorted(asked["customer_lookup"] - {own})
    other_cases = sorted(asked["find_related_cases"] - {own_case})
    if others or other_cases:
        what = (f"it looked up {', '.join(others)} instead of the ticket's customer {own}" if others else
                f"it read the related cases of {', '.join(other_cases)} instead of the ticket's case {own_case}")
        ctx.state["supervisor_untrusted"] = f"{what}; its decision is not used"
        return None
    return decision


def _kb_calls(ctx: RunContext) -> tuple[list[dict], bool, bool]:
    """(articles kb_search returned in this run, whether any search failed, whether one ran)."""
    rows = list(AgentCall.objects.filter(run=ctx.run, kind=AgentCall.Kind.TOOL, name="kb_search").order_by("id"))
    hits: dict[str, dict] = {}
    for row in rows:
        result = (row.output or {}).get("result")
        if row.status == AgentCall.Status.OK and isinstance(result, dict):
            for hit in result.get("results", []):
                hits.setdefault(hit["id"], hit)
    return list(hits.values()), any(r.status == AgentCall.Status.ERROR for r in rows), bool(rows)


def triage_summary(ctx: RunContext) -> dict:
    """The triage as stored on the ticket: the final TriageResult after the code's guards,
    with what led to it (translation, supervisor, route, KB hits, failures)."""
    translation = translation_of(ctx)
    decision = trusted_decision(ctx)
    failures = [{"agent": key, "error": entry.get("error", "")}
                for key, entry in ctx.results.items() if entry.get("error")]
    if decision is None and ctx.output("supervisor") is not None:
        failures.append({"agent": "supervisor", "error": ctx.state.get("supervisor_untrusted", "")})
    route, result = None, None
    if decision is not None:
        route = "escalate" if decision["requires_escalation"] else decision["ticket_type"]
        result = ctx.state.get("escalation") if route == "escalate" else ctx.output(route)
    kb_hits, kb_failed, kb_ran = _kb_calls(ctx)
    incomplete = result is None
    if result is None:
        failed = next((f for f in failures if f["agent"] in ("supervisor", *AREAS)), None)
        why = (f"The {failed['agent']} failed ({failed['error'][:200]}); a person triages this ticket."
               if failed else f"The triage did not finish ({ctx.stop_reason or 'no result'}); a person triages it.")
        # No urgency without a trusted supervisor: the code's guards decide it (never a made-up
        # "medium" that sinks the ticket below every high one; casework.support.guards).
        result = {"urgency": (decision or {}).get("urgency", ""),
                  "extracted_info": {"product_area": (decision or {}).get("ticket_type", "general"),
                                     "issue_type": "triage_incomplete", "sentiment": "unknown",
                                     "language": translation["original_language"] or "en"},
                  "recommended_action": "route_specialist", "suggested_response": "", "relevant_articles": [],
                  "reasoning": why}
    result = dict(result)
    known = {h["id"] for h in kb_hits}
    # Only articles kb_search really returned in this run are kept (a model may name others).
    result["relevant_articles"] = [a for a in result.get("relevant_articles", []) if a in known]
    guards = []
    if result["recommended_action"] == "auto_respond":
        reasons = []
        if translation["status"] == "failed":
            reasons.append("the translator failed")
        elif not translation["available"]:
            reasons.append("the ticket could not be translated")
        if kb_failed:
            reasons.append("the knowledge-base search failed")
        elif not result["relevant_articles"]:
            reasons.append("no article from kb_search backs the reply")
        if reasons:
            result["recommended_action"] = "route_specialist"
            guards.append("Not auto-answered: " + "; ".join(reasons) + ".")
    return {"run": ctx.run.pk, "provider": ctx.run.provider, "stop_reason": ctx.stop_reason, "incomplete": incomplete,
            "translation": {k: v for k, v in translation.items() if k != "messages"},
            "supervisor": decision, "route": route, "customer": ctx.state.get("input_customer"),
            "kb_results": kb_hits, "kb_failed": kb_failed, "kb_searched": kb_ran,
            "result": result, "failures": failures, "guards": guards}


def _triage_finish(ctx: RunContext) -> None:
    from casework.support.services import ticket_apply_triage

    ticket_apply_triage(actor="agent:support", ticket=ctx.case.support_ticket, triage=triage_summary(ctx))


def _on_failed(ctx: RunContext, exc: Exception) -> None:
    """A triage run that raised: its ticket says the triage failed and waits in the queue for a
    person (not for a triage that will never land). An intake has no ticket yet."""
    from casework.support.services import reply_translation_apply, ticket_triage_failed

    if ctx.run.mode == "reply":
        # The reply still goes out, as written; the page says the translator failed.
        reply_translation_apply(actor="system", message_id=ctx.state["input_message_id"], output=None,
                                provider=ctx.run.provider, error=f"{type(exc).__name__}: {exc}")
        return
    if ctx.run.mode != "triage" or ctx.run.case_id is None:
        return
    ticket_triage_failed(actor="system", ticket=ctx.case.support_ticket, run=ctx.run.pk,
                         error=f"{type(exc).__name__}: {exc}")


# --- reply (issue 25.3) --------------------------------------------------------------------
# A person's reply to a customer whose language is not English: reply_translator gives it in
# the customer's language and in English; the finish queues its email (the translated text, or
# the text as written when no translation was made, which the page says).

def _reply_prepare(ctx: RunContext) -> None:
    from casework.support.models import TicketMessage

    message = TicketMessage.objects.select_related("ticket").get(pk=ctx.state["input_message_id"])
    ctx.state["input_reply"] = message.text
    ctx.state["input_language"] = message.ticket.language or "en"


def _reply_plan(ctx: RunContext) -> Step | None:
    if "reply_translator" in ctx.results:
        return None
    return Step("reply_translator", [CallSpec("reply_translator", REPLY_TRANSLATOR, {
        "customer_language": ctx.state["input_language"], "reply": ctx.state["input_reply"]})], index=0)


def _reply_finish(ctx: RunContext) -> None:
    from casework.support.services import reply_translation_apply

    entry = ctx.results.get("reply_translator") or {}
    reply_translation_apply(actor="agent:support_reply_translator", message_id=ctx.state["input_message_id"],
                            output=ctx.output("reply_translator"), provider=ctx.run.provider,
                            error=entry.get("error", "") or ctx.stop_reason or "")


# --- the pipeline -----------------------------------------------------------------------

PREPARE = {"intake": _intake_prepare, "triage": _triage_prepare, "reply": _reply_prepare}
FINISH = {"intake": _intake_finish, "triage": _triage_finish, "reply": _reply_finish}


def _prepare(ctx: RunContext) -> None:
    PREPARE[ctx.run.mode](ctx)


def _finish(ctx: RunContext) -> None:
    FINISH[ctx.run.mode](ctx)


support_pipeline = register_pipeline(Pipeline(
    name=PIPELINE,
    description="Support ticket intake (matching) and triage (seed 001).",
    modes={"intake": _intake_plan, "triage": _triage_plan, "reply": _reply_plan},
    prepare=_prepare,
    finish=_finish,
    on_failed=_on_failed,
    agents={"ticket_matcher": TICKET_MATCHER, "translator": TRANSLATOR, "supervisor": SUPERVISOR, **SPECIALISTS,
            "reply_translator": REPLY_TRANSLATOR},
    max_steps=6,
))
