"""Every write a person (or another system) makes to transaction investigations; each is
audited in its transaction. The pipeline's writes are in casework/transactions/progress.py."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404
from django.utils import timezone
from pydantic import ValidationError as PydanticValidationError

from agents.tasks import pipeline_enqueue
from audit.services import audit_record
from casework.cases.services import case_create
from casework.entities.extraction import entities_extract
from casework.errors import Conflict
from casework.people.roles import ADMIN, MANAGER, user_roles
from casework.transactions import rules
from casework.transactions.backtest import backtest
from casework.transactions.events import ACTIONS, card_block_request
from casework.transactions.models import Investigation, Recommendation, RuleDraft, Transaction
from casework.transactions.states import FINAL, investigation_transition

PIPELINE = "transactions"


# --- Investigations -------------------------------------------------------------------------

@transaction.atomic
def investigation_start(*, actor, transaction_id: str, initial_state: dict | None = None) -> Investigation:
    """Open a TXN case for one transaction and queue its investigation (run on commit).

    An unknown transaction id is a 404 before anything is written; a transaction already
    under an open investigation is a Conflict naming that case. `initial_state` may carry
    safeguards for this investigation (max_steps, timeouts), e.g. from the demo.
    """
    # The transaction's row lock makes two concurrent starts for it take turns, so the second
    # sees the first's open investigation.
    txn = (Transaction.objects.select_for_update(of=("self",)).select_related("account")
           .filter(transaction_id=transaction_id).first())
    if txn is None:
        raise Http404(f"No transaction {transaction_id!r}.")
    open_one = (Investigation.objects.select_related("case").filter(transaction=txn)
                .exclude(case__status="closed").first())
    if open_one is not None:
        raise Conflict(f"{transaction_id} is already being investigated in {open_one.case.reference}.",
                       code="already_investigating")
    case = case_create(
        actor=actor, case_type="transaction_investigation",
        title=f"{txn.transaction_id}: {txn.amount} {txn.currency} at {txn.merchant} ({txn.country})"[:200],
        description=f"Card {txn.account.account_id} ending {txn.card_last4}, {txn.get_channel_display()}, "
                    f"MCC {txn.mcc}, {txn.occurred_at:%Y-%m-%d %H:%M} UTC.",
        priority="medium",
    )
    investigation = Investigation(case=case, transaction=txn)
    investigation.full_clean(exclude=["case", "transaction"])
    investigation.save()
    entities_extract(case=case)
    audit_record(actor=actor, action="txn.investigation_started", case=case, obj=investigation,
                 data={"transaction_id": txn.transaction_id})
    pipeline_enqueue(case=case, pipeline=PIPELINE, mode="investigate", actor=actor,
                     initial_state={"investigation_id": investigation.pk, **(initial_state or {})})
    return investigation


def _lock(investigation: Investigation) -> Investigation:
    return Investigation.objects.select_for_update().select_related("case", "transaction").get(pk=investigation.pk)


@transaction.atomic
def investigation_resume(*, actor, investigation: Investigation):
    """Run the planner again from the investigation's saved state: finished tools are never
    run again (they are in completed_steps). A FAILED or TIMED_OUT investigation moves back to
    IN_PROGRESS (a person's move, or the system's); a completed or inconclusive one is final,
    and the lifecycle refuses it (Conflict naming both states)."""
    from agents.models import AgentRun

    investigation = _lock(investigation)
    if investigation.case.is_closed:
        raise Conflict(f"{investigation.case.reference} is closed.", code="case_closed")
    if investigation.status in FINAL:
        # The lifecycle lets only the system's re-assessment (a joined hit raising the stakes,
        # casework.transactions.reassess) move these; a resume never does.
        raise Conflict(f"{investigation.case.reference} cannot go from {investigation.get_status_display()} to "
                       "In progress: the agents are done and a person decides.", code="transition_refused")
    if AgentRun.objects.filter(case=investigation.case, pipeline=PIPELINE, status__in=AgentRun.ACTIVE).exists():
        raise Conflict(f"{investigation.case.reference} is running already.", code="run_active")
    previous = investigation.status
    investigation.error = ""
    # IN_PROGRESS already (a run that ended without saying so): the move is a no-op and the
    # new run picks it up.
    investigation_transition(actor=actor, investigation=investigation, to=Investigation.Status.IN_PROGRESS,
                             reason="Resumed from the saved state.", save=("error",))
    audit_record(actor=actor, action="txn.investigation_resumed", case=investigation.case, obj=investigation,
                 data={"status": previous, "completed_steps": investigation.state.get("completed_steps", [])})
    return pipeline_enqueue(case=investigation.case, pipeline=PIPELINE, mode="investigate", actor=actor,
                            initial_state={"investigation_id": investigation.pk, "resume": True})


# --- What people do with the findings -------------------------------------------------------

@transaction.atomic
def recommendation_decide(*, actor, recommendation: Recommendation, accept: bool, note: str = "") -> Recommendation:
    rec = Recommendation.objects.select_for_update().select_related("investigation__case").get(pk=recommendation.pk)
    status = Recommendation.Status.ACCEPTED if accept else Recommendation.Status.REJECTED
    if rec.status != Recommendation.Status.PROPOSED:
        if rec.status == status:
            return rec  # the same answer again (a double click): nothing to do
        raise Conflict(f"This recommendation was already {rec.status}.", code="already_decided")
    rec.status, rec.decided_by, rec.decided_at, rec.note = status, actor, timezone.now(), (note or "").strip()
    rec.full_clean()
    rec.save(update_fields=["status", "decided_by", "decided_at", "note"])
    audit_record(actor=actor, action=f"txn.recommendation_{status}", case=rec.investigation.case, obj=rec,
                 data={"action": rec.action, "note": rec.note})
    if accept and rec.action in ACTIONS:
        # An accepted recommendation emits its action, in this transaction (casework/transactions/events.py).
        card_block_request(actor=actor, recommendation=rec)
    return rec


def _rule_locked(rule: RuleDraft) -> RuleDraft:
    rule = RuleDraft.objects.select_for_update().select_related("investigation__case").get(pk=rule.pk)
    if rule.status == RuleDraft.Status.PROMOTED:
        raise Conflict(f"Rule {rule.name!r} is promoted already; it is no longer a draft.", code="already_promoted")
    return rule


@transaction.atomic
def rule_draft_update(*, actor, rule: RuleDraft, name: str, description: str, conditions: list) -> RuleDraft:
    """Edit a draft rule and back-test it again."""
    try:
        parsed = rules.Rule.model_validate({"name": name, "description": description, "conditions": conditions})
    except PydanticValidationError as exc:
        raise ValidationError({"conditions": [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]})
    rule = _rule_locked(rule)
    rule.name, rule.description = parsed.name, parsed.description
    rule.conditions = [c.dump() for c in parsed.conditions]
    rule.backtest = backtest(parsed.conditions, exclude_account_ids=[rule.investigation.transaction.account_id])
    rule.full_clean()
    rule.save()
    audit_record(actor=actor, action="txn.rule_edited", case=rule.investigation.case, obj=rule,
                 data={"name": rule.name, "conditions": rule.conditions, "backtest": rule.backtest["summary"]})
    return rule


def may_promote(user) -> bool:
    return bool(user_roles(user) & {MANAGER, ADMIN})


@transaction.atomic
def rule_promote(*, actor, rule: RuleDraft) -> RuleDraft:
    """Promote a drafted rule to the detection rules; managers and admins only."""
    if not may_promote(actor):
        raise PermissionDenied("Only managers and admins promote rules.")
    rule = _rule_locked(rule)
    rule.backtest = backtest(rule.conditions, exclude_account_ids=[rule.investigation.transaction.account_id])
    rule.status, rule.promoted_by, rule.promoted_at = RuleDraft.Status.PROMOTED, actor, timezone.now()
    rule.full_clean()
    rule.save()
    audit_record(actor=actor, action="txn.rule_promoted", case=rule.investigation.case, obj=rule,
                 data={"name": rule.name, "conditions": rule.conditions, "backtest": rule.backtest["summary"]})
    # Promoted means proposed to monitoring: version 1 in shadow mode, awaiting another
    # manager's approval (casework/transactions/monitoring).
    from casework.transactions.monitoring.models import DetectionRule
    from casework.transactions.monitoring.services import rule_create

    reference = rule.investigation.case.reference
    name = rule.name if not DetectionRule.objects.filter(name=rule.name).exists() else f"{rule.name} ({reference})"
    rule_create(actor=actor, name=name[:120], description=rule.description, conditions=rule.conditions,
                action="review", mode="shadow", drafted_from=rule,
                note=f"Drafted by the planner in {reference}; back-test: {rule.backtest['summary']}")
    return rule


@transaction.atomic
def transaction_mark_fraud(*, actor, investigation: Investigation) -> None:
    """A case decided "fraud" labels its transaction as confirmed fraud (for back-tests)."""
    updated = Transaction.objects.filter(pk=investigation.transaction_id, is_fraud=False).update(is_fraud=True)
    if updated:
        audit_record(actor=actor, action="txn.transaction_confirmed_fraud", case=investigation.case,
                     obj=investigation.transaction, data={"transaction_id": investigation.transaction.transaction_id})
