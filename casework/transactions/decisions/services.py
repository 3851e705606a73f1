"""Decide one transaction at authorisation time (POST /api/transactions/decide): store it as
ingestion does, answer from the live rules and the lists within the budget, record the
decision and audit it. What follows (shadow rules, every live rule again, cases, joins,
card-block actions) is today's evaluation in the worker, queued by the ingestion on commit
(casework/transactions/monitoring/evaluate.py), which also records its hits on the decision."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.services import audit_record
from casework.transactions import aggregates, ruleset
from casework.transactions.decisions.engine import evaluate_live
from casework.transactions.decisions.models import Decision
from casework.transactions.ingest import rule_row, transactions_import
from casework.transactions.lists.lookup import ListLookup


def _by_field(exc: ValidationError) -> ValidationError:
    """The import's errors ("row 1: amount") keyed by the field alone: one transaction."""
    errors = {key.split(": ", 1)[1]: msgs for key, msgs in exc.message_dict.items() if ": " in key}
    return ValidationError(errors or exc.message_dict)


def _store(*, actor, data: dict, aggs=None):
    """The transaction stored as ingestion stores it (audited below, in the decision's own entry).
    Two authorisations on a new card at the same moment both create its account: the second
    insert fails on the unique account id once the first commits, and is tried once more,
    finding the account. The same transaction id twice at once: the second is told it is stored."""
    for attempt in (1, 2):
        try:
            # The first attempt leaves a stored id to the unique index (one query fewer).
            [txn] = transactions_import(actor=actor, rows=[data], via="decide", audit=False, aggs=aggs,
                                        look_for_stored=attempt == 2)
            return txn
        except ValidationError as exc:
            raise _by_field(exc) from None
        except IntegrityError:
            if attempt == 2:
                raise ValidationError({"transaction_id": [f"{data.get('transaction_id')} is already stored."]})
    raise AssertionError("unreachable")


@transaction.atomic
def transaction_decide(*, actor, data, started: float, started_ns: int | None = None,
                       clock: Callable[[], float] = time.monotonic) -> Decision:
    """Steps: store the transaction (validated as ingestion validates it; a ValidationError
    names the field); read the lists for its values; evaluate the live rules in order until
    the outcome is settled or the deadline (`started` + TXN_DECISION_BUDGET_MS on `clock`)
    passes; record the decision with the server's latency; audit it."""
    started_ns = started_ns if started_ns is not None else time.perf_counter_ns()
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["Send one transaction as a JSON object."]})
    active = ruleset.active()  # one small query; compiled once per rule set
    txn = _store(actor=actor, data=data, aggs=active.aggregates)
    now = timezone.now()
    live = active.live
    row = aggregates.with_aggregates(rule_row(txn), txn.aggregates, list(active.live_aggregates))
    answer = evaluate_live(row, live, ListLookup.for_rows([row], now=now), clock=clock,
                           deadline=started + settings.TXN_DECISION_BUDGET_MS / 1000,
                           fallback=settings.TXN_DECISION_FALLBACK)
    latency_us = (time.perf_counter_ns() - started_ns) // 1000
    decision = Decision.objects.create(
        transaction=txn, outcome=answer.outcome, hits=answer.hits, score=answer.score, timed_out=answer.timed_out,
        rules_evaluated=answer.rules_evaluated, latency_us=latency_us,
        created_by=actor if getattr(actor, "pk", None) else None, created_at=now)
    audit_record(actor=actor, action="txn.decided", obj=decision, data={
        "transaction_id": txn.transaction_id, "account_id": txn.account.account_id, "decision_id": str(decision.decision_id), "outcome": answer.outcome,
        "score": answer.score, "timed_out": answer.timed_out,
        "hits": [h.get("rule") or h.get("list") for h in answer.hits]})
    return decision
