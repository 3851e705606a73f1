"""Detection rules run on every ingested transaction, in the worker.

Ingestion commits the transactions and enqueues `monitoring_evaluate` with their ids (on
commit); a beat sweep (`monitoring_evaluate_pending`) picks up any whose message was lost.
One evaluation, for a batch of transactions:

1. lock the batch's transactions not yet evaluated (SKIP LOCKED: a duplicate message, or
   the sweep racing the message, evaluates each transaction once);
2. read the active rule versions (one query) and evaluate each on each transaction, row by
   row (casework.transactions.rules: declarative, bounded, no history scan; an aggregate is
   read from the snapshot the transaction took of the counters when it was stored,
   casework.transactions.aggregates);
3. record every hit (shadow and live, all actions) with its rule version;
4. each transaction's outcome from its live hits and the allow and deny lists it is on
   (casework/transactions/decisions/outcome.py: a deny list blocks; an allow list waives review
   rules, not block rules). The transactions whose outcome is review or block are grouped by
   card (account and last four digits), with their live review/block hits. A card with a
   live allow hit is let through (unless a deny list names it): its hits are recorded, no
   case opens. Otherwise, card by
   card in one order (account, last four), the hits join the card's current case (its
   CardCase row, locked) if that case is open and had a hit within TXN_HIT_JOIN_MINUTES, or
   open a TXN case for the card's first hit transaction and queue its investigation. One
   current case per card is the database's rule (CardCase's partial unique constraint): an
   evaluation racing this one on the same new card fails to insert its claim, rolls its case
   back (a savepoint) and joins the winner's. A live block hit also requests the card block
   (the `transaction.card_block_requested` action event, once per case), which core banking
   confirms like any action;
5. a hit that joined a case and raises the stakes (a larger amount than its investigation
   assessed, a block rule) re-assesses the investigation on it (casework.transactions.reassess);
6. stamp the transactions evaluated, and record on each one's authorisation-time decision
   (if POST /api/transactions/decide made one) the outcome and hits found here.

All of it in one database transaction: a worker that dies leaves the batch unevaluated, and
the sweep runs it again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.services import audit_record
from casework.transactions import aggregates, rules, ruleset
from casework.transactions.decisions.outcome import outcome_of
from casework.transactions.lists.lookup import Listed, ListLookup
from casework.transactions.monitoring.models import CardCase, RuleHit, RuleVersion

LIVE_CASE_ACTIONS = (RuleVersion.Action.REVIEW, RuleVersion.Action.BLOCK)
ACTOR = "system"


def active_versions() -> list[tuple[RuleVersion, list[rules.Condition | rules.ListCondition]]]:
    """The active versions by rule name, with their conditions as the process compiled them
    (casework/transactions/ruleset.py: parsed once per rule set, not once per batch)."""
    versions = list(RuleVersion.objects.filter(status=RuleVersion.Status.ACTIVE).select_related("rule")
                    .order_by("rule__name"))
    compiled = _compiled()
    return [(v, compiled[v.pk].conditions if v.pk in compiled else rules.parse(v.conditions)) for v in versions]


def _compiled() -> dict:
    active = ruleset.active()
    return {r.version_id: r for r in (*active.live, *active.shadow)}


@dataclass
class Flagged:
    """A transaction whose outcome is review or block: its live review/block hits (none when
    a deny list alone flagged it) and its deny-list entries."""

    pk: int
    hits: list[RuleHit] = field(default_factory=list)
    denied: list[Listed] = field(default_factory=list)


def _current(account_id: int, last4: str) -> CardCase | None:
    return (CardCase.objects.select_for_update(of=("self",)).select_related("case")
            .filter(account_id=account_id, card_last4=last4, current=True).first())


def _card_case(account_id: int, last4: str, first_pk: int, txn_ids: dict[int, str], *,
               now: datetime, since: datetime) -> tuple[object, bool]:
    """The case these hits of one card go to, and whether they opened it.

    The card's current case (its CardCase row, locked) if it is open and had a hit since
    `since`; else a case a person opened on the card since `since` (no hit in it); else a new
    case for the first hit's transaction. The latter two become the card's current case by
    inserting its row, in a savepoint: if another evaluation inserted one first (the unique
    constraint), the savepoint's case is rolled back and the hits join that one."""
    from casework.cases.sla import DONE_STATUSES

    row = _current(account_id, last4)
    if row is not None:
        if row.case.status not in DONE_STATUSES and row.last_hit_at >= since:
            row.last_hit_at = max(row.last_hit_at, now)
            row.save(update_fields=["last_hit_at"])
            return row.case, False
        row.current = False  # decided, or quiet for longer than the window: the card's next case
        row.save(update_fields=["current"])
    try:
        with transaction.atomic():
            case = _person_case(account_id, last4, since=since)
            opened = case is None
            if opened:
                case = _open_case(first_pk, txn_ids)
            CardCase.objects.create(account_id=account_id, card_last4=last4, case=case, opened_at=now,
                                    last_hit_at=now)
            return case, opened
    except IntegrityError:
        # Another evaluation made the card's case first (it has committed): join it.
        row = _current(account_id, last4)
        if row is None:
            raise
        row.last_hit_at = max(row.last_hit_at, now)
        row.save(update_fields=["last_hit_at"])
        return row.case, False


def _person_case(account_id: int, last4: str, *, since: datetime):
    """An open TXN case a person opened on the card since `since` (no rule hit in it)."""
    from casework.cases.sla import DONE_STATUSES
    from casework.transactions.models import Investigation

    investigation = (Investigation.objects.filter(transaction__account_id=account_id, transaction__card_last4=last4,
                                                  created_at__gte=since, case__rule_hits__isnull=True)
                     .exclude(case__status__in=DONE_STATUSES).select_related("case").order_by("-created_at").first())
    return investigation.case if investigation else None


@transaction.atomic
def transactions_evaluate(ids: list[int], *, now: datetime | None = None) -> dict:
    """Evaluate the active rules on these transactions (those not evaluated yet). Returns counts."""
    from casework.transactions.models import Transaction

    given = now is not None
    now = now or timezone.now()
    rows = list(Transaction.objects.select_for_update(skip_locked=True, of=("self",))
                .filter(pk__in=ids, evaluated_at__isnull=True).order_by("pk")
                .values_list("pk", "account_id", "card_last4", "transaction_id", "aggregates", *rules.ROW_COLUMNS))
    if not rows:
        return {"evaluated": 0, "hits": 0, "opened": 0, "joined": 0}
    versions = active_versions()
    # The aggregates every active rule reads: each transaction's snapshot from when it was stored.
    read = rules.aggregates_of([c for _, conditions in versions for c in conditions])
    parsed = [(pk, account_id, last4, transaction_id,
               aggregates.with_aggregates(rules.row_from_values(values), snapshot, read))
              for pk, account_id, last4, transaction_id, snapshot, *values in rows]
    lookup = ListLookup.for_rows([p[-1] for p in parsed], now=now)
    hits: list[RuleHit] = []
    by_card: dict[tuple[int, str], list[Flagged]] = defaultdict(list)
    allowed: set[tuple[int, str]] = set()
    txn_ids = {}
    verdicts: dict[int, tuple[str, list[RuleHit], list[Listed]]] = {}
    for pk, account_id, last4, transaction_id, row in parsed:
        txn_ids[pk] = transaction_id
        listed = lookup.listed(row)
        txn_hits = []
        for version, conditions in versions:
            if not rules.rule_matches(conditions, row, lookup):
                continue
            hit = RuleHit(version=version, transaction_id=pk, mode=version.mode, action=version.action,
                          created_at=now)
            hits.append(hit)
            txn_hits.append(hit)
        live = [h for h in txn_hits if h.mode == RuleVersion.Mode.LIVE]
        outcome = outcome_of(live_actions=[h.action for h in live], listed=listed)
        verdicts[pk] = (outcome, txn_hits, listed)
        denied = [e for e in listed if e.kind == "deny"]
        if not denied and any(h.action == RuleVersion.Action.ALLOW for h in live):
            allowed.add((account_id, last4))
        if outcome in LIVE_CASE_ACTIONS:
            by_card[(account_id, last4)].append(
                Flagged(pk, [h for h in live if h.action != RuleVersion.Action.ALLOW], denied))
    opened = joined = 0
    joined_cases: list[int] = []
    since = now - timedelta(minutes=settings.TXN_HIT_JOIN_MINUTES)
    # Card by card in one order: two evaluations claiming the same cards never wait on each other
    # in a circle.
    for card in sorted(by_card):
        if card in allowed:
            # A live allow rule lets the card through; a deny list still flags its transaction.
            by_card[card] = [f for f in by_card[card] if f.denied]
        flagged = by_card[card]
        if not flagged:
            continue
        card_hits = [h for f in flagged for h in f.hits]
        case, opened_it = _card_case(*card, min(f.pk for f in flagged), txn_ids, now=now, since=since)
        if opened_it:
            first = min(flagged, key=lambda f: f.pk)
            if first.hits:
                first.hits[0].opened_case = True
            opened += 1
        else:
            joined += 1
            joined_cases.append(case.pk)
        for hit in card_hits:
            hit.case = case
        blocking = next((h for h in card_hits if h.action == RuleVersion.Action.BLOCK), None)
        if blocking is not None:
            _request_block(case, blocking, now)
        _audit_card(case, flagged, txn_ids, opened_it)
    RuleHit.objects.bulk_create(hits, ignore_conflicts=True)
    # A joined hit that raises the stakes (a larger amount, a block) re-assesses the case's
    # investigation on it, now or at the end of the run working on it.
    from casework.transactions.reassess import investigation_reassess_if_raised

    for case_id in joined_cases:
        investigation_reassess_if_raised(case_id=case_id)
    _record_on_decisions(verdicts, now=now)
    # Stamped when the decision is made (the end of this evaluation), unless a test gives the clock.
    Transaction.objects.filter(pk__in=[r[0] for r in rows]).update(evaluated_at=now if given else timezone.now())
    return {"evaluated": len(rows), "hits": len(hits), "opened": opened, "joined": joined}


def _open_case(first_pk: int, txn_ids: dict[int, str]):
    from casework.errors import Conflict
    from casework.transactions.models import Investigation
    from casework.transactions.services import investigation_start

    try:
        return investigation_start(actor=ACTOR, transaction_id=txn_ids[first_pk]).case
    except Conflict:
        # Already under an open investigation (a person started one): the hits join it.
        return (Investigation.objects.select_related("case").filter(transaction_id=first_pk)
                .exclude(case__status="closed").order_by("-created_at").first().case)


def _request_block(case, hit: RuleHit, now: datetime) -> None:
    """A live block rule matched: ask core banking to block the card (the action event, in this
    transaction; once per case), as an accepted block recommendation does."""
    from casework.transactions.events import card_block_by_rule
    from casework.transactions.models import Transaction

    txn = Transaction.objects.select_related("account").get(pk=hit.transaction_id)
    card_block_by_rule(case=case, txn=txn, version=hit.version, now=now)


def _audit_card(case, flagged: list[Flagged], txn_ids, opened: bool) -> None:
    audit_record(actor=ACTOR, action="txn.rule_hits", case=case, data={
        "opened": opened,
        "hits": [{"rule": h.version.rule.name, "version": h.version.number, "action": h.action,
                  "transaction_id": txn_ids[h.transaction_id]} for f in flagged for h in f.hits],
        **({"listed": [{**e.as_hit(), "transaction_id": txn_ids[f.pk]} for f in flagged for e in f.denied]}
           if any(f.denied for f in flagged) else {})})


def _hit_data(hit: RuleHit, reasons: dict) -> dict:
    compiled = reasons.get(hit.version_id)
    return {"rule": hit.version.rule.name, "version": hit.version.number, "action": hit.action, "mode": hit.mode,
            "reason": compiled.reason if compiled else rules.describe(hit.version.conditions)}


def _record_on_decisions(verdicts: dict[int, tuple[str, list[RuleHit], list[Listed]]], *, now: datetime) -> None:
    """The outcome and every hit (live and shadow) on the transactions' authorisation-time
    decisions, if they have one (one query when none has)."""
    from casework.transactions.decisions.models import Decision

    decisions = list(Decision.objects.filter(transaction_id__in=list(verdicts), evaluated_at__isnull=True))
    reasons = _compiled() if decisions else {}
    for decision in decisions:
        outcome, txn_hits, listed = verdicts[decision.transaction_id]
        decision.evaluated_outcome = outcome
        decision.evaluated_hits = [e.as_hit() for e in listed] + [_hit_data(h, reasons) for h in txn_hits]
        decision.evaluated_at = now
    Decision.objects.bulk_update(decisions, ["evaluated_outcome", "evaluated_hits", "evaluated_at"])


def pending_ids(*, now: datetime, older_than_seconds: float = 5.0, limit: int = 5000) -> list[int]:
    """Transactions ingested more than a few seconds ago and not evaluated (a lost message)."""
    from casework.transactions.models import Transaction

    cutoff = now - timedelta(seconds=older_than_seconds)
    return list(Transaction.objects.filter(evaluated_at__isnull=True, created_at__lte=cutoff)
                .order_by("created_at").values_list("pk", flat=True)[:limit])
