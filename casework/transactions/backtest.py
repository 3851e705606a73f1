"""A detection rule's back-test: how it would have done over a window of recent history,
scored against what people decided (the rule language itself is casework/transactions/rules.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Max, Q
from django.utils import timezone

from casework.transactions.lists.lookup import ListLookup
from casework.transactions.models import Investigation, Transaction
from casework.transactions.rules import (
    ROW_COLUMNS,
    Condition,
    ListCondition,
    aggregates_of,
    parse,
    row_from_values,
    rule_matches,
)

BACKTEST_DAYS = 90
BACKTEST_MAX_ROWS = 200_000
FIRED_IDS_SHOWN = 1000


def backtest(conditions: list[dict] | list[Condition], *, since: datetime | None = None,
             until: datetime | None = None, drafted_from: str | None = None, exclude_account_ids=(),
             exclude_transaction_ids=()) -> dict:
    """How the rule would have done over a chosen window of history (default: the last
    BACKTEST_DAYS days up to the newest transaction), scored against what people decided.

    It does not cheat: the transactions the rule was drafted from (the investigated card's,
    `exclude_account_ids`, or named ones) are left out, since a rule always fires on the
    case it was written from. A transaction counts as fraud when it carries a chargeback or a
    person decided its TXN case "fraud"; as not fraud when a person decided its case "not
    fraud"; otherwise it is undecided and scores nothing. Precision is fraud among the decided
    transactions it fired on; recall is the fraud it fired on among all the fraud in the window.
    At most BACKTEST_MAX_ROWS transactions are read, newest first; the report says when the
    window held more. A list condition is tested against the lists as they are now (their
    entries' history is in the audit trail, not replayed here); the lists' entries for the
    values of each chunk of 2,000 transactions are read in one query (ListLookup.prefetch).

    A rule with aggregates (velocity) is replayed instead: the window's transactions in time
    order, after a warm-up of its longest aggregate window (at most BACKTEST_MAX_ROWS more),
    each one's aggregates computed from the transactions before it as the live counters do
    (casework.transactions.aggregates): no look-ahead, the same hits as live for a stream that
    arrived in time order.
    """
    parsed = parse(conditions)
    aggs = aggregates_of(parsed)
    if until is None:
        # The history's own present: its newest transaction (imported history may be old).
        latest = Transaction.objects.aggregate(latest=Max("occurred_at"))["latest"]
        until = (latest + timedelta(seconds=1)) if latest else timezone.now()
    since = since or until - timedelta(days=BACKTEST_DAYS)
    window = Transaction.objects.filter(occurred_at__gte=since, occurred_at__lt=until)
    if drafted_from:
        exclude_account_ids = [*exclude_account_ids, *Transaction.objects.filter(transaction_id=drafted_from)
                               .values_list("account_id", flat=True)]
    excluded = window.filter(Q(account_id__in=list(exclude_account_ids)) | Q(pk__in=list(exclude_transaction_ids)))
    excluded_count = excluded.count()
    kept = window.exclude(pk__in=excluded.values("pk"))
    decided = dict(Investigation.objects.filter(transaction__in=kept, case__decisions__final=True,
                                                case__decisions__outcome__in=("fraud", "not_fraud"))
                   .values_list("transaction_id", "case__decisions__outcome"))
    warm_up_short = [False]
    if aggs:
        rows, truncated = _replayed(window, aggs, since=since, until=until, warm_up_short=warm_up_short,
                                    excluded=set(excluded.values_list("pk", flat=True)))
    else:
        rows = ((pk, row_from_values(values)) for pk, *values in kept.order_by("-occurred_at", "-id")
                .values_list("pk", *ROW_COLUMNS)[:BACKTEST_MAX_ROWS + 1].iterator(chunk_size=2000))
        truncated = False
    considered = fired = fired_fraud = fired_not_fraud = fraud_total = decided_total = 0
    fired_ids = []
    lookup = ListLookup(now=timezone.now()) if any(isinstance(c, ListCondition) for c in parsed) else None
    for chunk in _chunks(rows, 2000):
        if lookup is not None:
            lookup.prefetch(row for _, row in chunk)
        for pk, row in chunk:
            if considered == BACKTEST_MAX_ROWS:
                truncated = True
                break
            considered += 1
            label = "fraud" if row["is_fraud"] else decided.get(pk)
            fraud_total += label == "fraud"
            decided_total += label is not None
            if rule_matches(parsed, row, lookup):
                fired += 1
                if len(fired_ids) < FIRED_IDS_SHOWN:
                    fired_ids.append(pk)
                fired_fraud += label == "fraud"
                fired_not_fraud += label == "not_fraud"
        if truncated:
            break
    scored = fired_fraud + fired_not_fraud
    span = f"{since:%Y-%m-%d} to {until:%Y-%m-%d}"
    return {
        "since": since.isoformat(), "until": until.isoformat(), "window": considered, "truncated": truncated,
        "excluded": excluded_count, "fired": fired, "fired_fraud": fired_fraud, "fired_not_fraud": fired_not_fraud,
        # Which ones (the first FIRED_IDS_SHOWN found), in time order.
        "fired_transaction_ids": list(Transaction.objects.filter(pk__in=fired_ids).order_by("occurred_at", "pk")
                                      .values_list("transaction_id", flat=True)),
        "fired_undecided": fired - scored, "fraud_total": fraud_total, "decided_total": decided_total,
        "precision": round(fired_fraud / scored, 3) if scored else None,
        "recall": round(fired_fraud / fraud_total, 3) if fraud_total else None,
        "summary": (f"Would have fired on {fired} of {considered} transactions from {span}"
                    + (f" (the {excluded_count} it was drafted from left out)" if excluded_count else "")
                    + f": {fired_fraud} fraud, {fired_not_fraud} not fraud, {fired - scored} undecided."
                    + (f" Only the newest {BACKTEST_MAX_ROWS:,} were read." if truncated else "")
                    + (f" The aggregates of the first ones read only the {BACKTEST_MAX_ROWS:,} transactions before "
                       "them." if warm_up_short[0] else "")),
        "warm_up_truncated": warm_up_short[0],
    }


def _replayed(window, aggs, *, since, until, excluded: set[int], warm_up_short: list[bool]):
    """(pk, row) for a rule with aggregates: the history replayed in time order, from a
    warm-up of the longest window before `since`, through counters in memory (the live
    computation, casework.transactions.aggregates), so each transaction sees exactly the
    transactions before it: no look-ahead. Excluded transactions are counted (live, they
    were) but not scored. At most BACKTEST_MAX_ROWS are scored, the newest; (rows, truncated)."""
    from casework.transactions.aggregates import replay

    truncated = False
    newest = list(window.exclude(pk__in=excluded).order_by("-occurred_at", "-id")
                  .values_list("occurred_at", flat=True)[BACKTEST_MAX_ROWS:BACKTEST_MAX_ROWS + 1])
    if newest:
        since, truncated = newest[0], True
    warm_up = since - timedelta(seconds=max(a.seconds for a in aggs))
    # The warm-up is bounded too: at most BACKTEST_MAX_ROWS transactions before `since` (the
    # report says when the windows of the first ones scored were cut short).
    before = list(Transaction.objects.filter(occurred_at__gte=warm_up, occurred_at__lt=since)
                  .order_by("-occurred_at", "-id").values_list("occurred_at", flat=True)
                  [BACKTEST_MAX_ROWS:BACKTEST_MAX_ROWS + 1])
    if before:
        warm_up, warm_up_short[0] = before[0] + timedelta(microseconds=1), True
    history = (Transaction.objects.filter(occurred_at__gte=warm_up, occurred_at__lt=until).order_by("occurred_at", "pk")
               .values_list("pk", *ROW_COLUMNS).iterator(chunk_size=2000))

    def rows():
        for pk, *values in history:
            yield {**row_from_values(values), "pk": pk}

    def scored():
        for row in replay(rows(), aggs):
            at = row["occurred_at"]
            if at >= since and row["pk"] not in excluded and not (truncated and at == since):
                yield row["pk"], row
    return scored(), truncated


def _chunks(iterable, size: int):
    chunk = []
    for item in iterable:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
