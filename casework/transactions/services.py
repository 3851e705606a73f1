"""Every write a person (or another system) makes to transaction investigations; each is
audited in its transaction. The pipeline's writes are in casework/transactions/progress.py."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from django.conf import settings
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
from casework.transactions.models import CardAccount, Investigation, Recommendation, RuleDraft, Transaction
from casework.transactions.monitoring.evaluate import evaluate_after_commit, settlement_rates
from casework.transactions.schemas import TransactionIn, transactions_validate
from casework.transactions.states import investigation_transition

PIPELINE = "transactions"
MAX_TRANSACTIONS_PER_BATCH = 10_000
CENT = Decimal("0.01")


# --- Transactions ---------------------------------------------------------------------------

@transaction.atomic
def transactions_import(*, actor, rows: Sequence[Any], via: str = "api", numbers: Sequence[int] | None = None,
                        label: str = "row") -> list[Transaction]:
    """Store card transactions, all or nothing.

    Steps: validate every row (errors name the row and the field, "row 3: amount", or
    "line 4: amount" for a CSV file); refuse ids already stored or repeated in the batch;
    create the accounts that are new (they need a home_country); insert; audit once.
    """
    if not rows:
        raise ValidationError({"__all__": ["Send at least one transaction."]})
    if len(rows) > MAX_TRANSACTIONS_PER_BATCH:
        raise ValidationError({"__all__": [f"At most {MAX_TRANSACTIONS_PER_BATCH:,} transactions at a time."]})
    valid, errors = transactions_validate(rows, numbers=numbers, label=label)
    if not errors:
        errors = _refuse_duplicates_and_unknown_accounts(valid, numbers=numbers, label=label)
    rates = settlement_rates({row.currency for row in valid})
    if not errors:
        errors = _refuse_unknown_currencies(valid, rates, numbers=numbers, label=label)
    if errors:
        bad = len({key.split(":")[0] for key in errors})
        raise ValidationError({"__all__": [f"Nothing was imported: {bad} of {len(rows)} {label}s are invalid."],
                               **errors})
    accounts = {a.account_id: a for a in CardAccount.objects.filter(account_id__in={t.account_id for t in valid})}
    # New accounts in one statement (their fields were validated with the row).
    new = {}
    for row in valid:
        if row.account_id not in accounts and row.account_id not in new:
            new[row.account_id] = CardAccount(account_id=row.account_id, home_country=row.home_country,
                                              holder_name=row.holder_name)
    for account in CardAccount.objects.bulk_create(list(new.values()), batch_size=1000):
        accounts[account.account_id] = account
    created = Transaction.objects.bulk_create([
        Transaction(transaction_id=row.transaction_id, account=accounts[row.account_id], card_last4=row.card_last4,
                    amount=row.amount, currency=row.currency, merchant=row.merchant, mcc=row.mcc,
                    country=row.country, channel=row.channel, device_id=row.device_id,
                    occurred_at=row.occurred_at, is_fraud=row.is_fraud, auth_result=row.auth_result,
                    three_ds_result=row.three_ds_result, avs_result=row.avs_result, cvv_result=row.cvv_result,
                    ip_address=str(row.ip_address) if row.ip_address else None, email_hash=row.email_hash,
                    bin=row.bin, merchant_id=row.merchant_id,
                    settlement_amount=(row.amount * rates[row.currency]).quantize(CENT))
        for row in valid
    ], batch_size=1000)
    audit_record(actor=actor, action="txn.transactions_imported", data={
        "via": via, "count": len(created), "accounts": sorted(accounts)[:50],
        "first": valid[0].transaction_id, "last": valid[-1].transaction_id})
    # The detection rules run on them in the worker, once they are committed.
    evaluate_after_commit([t.pk for t in created])
    return created


def _refuse_duplicates_and_unknown_accounts(valid: list[TransactionIn], *, numbers, label) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    ids = [row.transaction_id for row in valid]
    stored = set(Transaction.objects.filter(transaction_id__in=ids).values_list("transaction_id", flat=True))
    known = set(CardAccount.objects.filter(account_id__in={r.account_id for r in valid})
                .values_list("account_id", flat=True))
    seen: set[str] = set()
    for index, row in enumerate(valid):
        number = numbers[index] if numbers else index + 1
        if row.transaction_id in stored:
            errors[f"{label} {number}: transaction_id"] = [f"{row.transaction_id} is already stored."]
        elif row.transaction_id in seen:
            errors[f"{label} {number}: transaction_id"] = [f"{row.transaction_id} appears twice in this batch."]
        seen.add(row.transaction_id)
        if row.account_id not in known and row.home_country is None:
            errors[f"{label} {number}: home_country"] = [f"{row.account_id} is a new account: give its home_country."]
        if row.home_country:
            known.add(row.account_id)
    return errors


def _refuse_unknown_currencies(valid, rates, *, numbers, label) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for index, row in enumerate(valid):
        if row.currency not in rates:
            number = numbers[index] if numbers else index + 1
            errors[f"{label} {number}: currency"] = [
                f"No exchange rate from {row.currency} to {settings.SETTLEMENT_CURRENCY}: an admin adds it first "
                "(Transactions > Currency rates)."]
    return errors


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
    rule.conditions = [c.model_dump() for c in parsed.conditions]
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
