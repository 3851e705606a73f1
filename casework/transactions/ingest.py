"""Storing card transactions (the API's import, CSV files, the demo), all or nothing: each row
validated, converted to the settlement currency, audited once, and handed to the detection
rules in the worker once committed (casework/transactions/monitoring)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from audit.services import audit_record
from casework.transactions import aggregates
from casework.transactions.models import CardAccount, Transaction
from casework.transactions.monitoring.models import CurrencyRate
from casework.transactions.monitoring.tasks import evaluate_after_commit
from casework.transactions.schemas import TransactionIn, transactions_validate

MAX_TRANSACTIONS_PER_BATCH = 10_000
CENT = Decimal("0.01")


@transaction.atomic
def transactions_import(*, actor, rows: Sequence[Any], via: str = "api", numbers: Sequence[int] | None = None,
                        label: str = "row", audit: bool = True, aggs=None,
                        look_for_stored: bool = True) -> list[Transaction]:
    """Store card transactions, all or nothing.

    Steps: validate every row (errors name the row and the field, "row 3: amount", or
    "line 4: amount" for a CSV file); refuse ids already stored or repeated in the batch;
    create the accounts that are new (they need a home_country); insert; audit once (unless
    the caller audits the import in its own entry: `audit=False`, the decision endpoint).
    `aggs`: the active rules' aggregates when the caller has read the rule set already.
    `look_for_stored=False`: no query for ids already stored; the unique index refuses them
    (an IntegrityError: the decision endpoint asks again, naming the id, on that rare path).
    """
    if not rows:
        raise ValidationError({"__all__": ["Send at least one transaction."]})
    if len(rows) > MAX_TRANSACTIONS_PER_BATCH:
        raise ValidationError({"__all__": [f"At most {MAX_TRANSACTIONS_PER_BATCH:,} transactions at a time."]})
    valid, errors = transactions_validate(rows, numbers=numbers, label=label)
    accounts = {a.account_id: a for a in CardAccount.objects.filter(account_id__in={t.account_id for t in valid})}
    if not errors:
        errors = _refuse_duplicates_and_unknown_accounts(valid, set(accounts), numbers=numbers, label=label,
                                                         look_for_stored=look_for_stored)
    rates = settlement_rates({row.currency for row in valid})
    if not errors:
        errors = _refuse_unknown_currencies(valid, rates, numbers=numbers, label=label)
    if errors:
        bad = len({key.split(":")[0] for key in errors})
        raise ValidationError({"__all__": [f"Nothing was imported: {bad} of {len(rows)} {label}s are invalid."],
                               **errors})
    # New accounts in one statement (their fields were validated with the row).
    new = {}
    for row in valid:
        if row.account_id not in accounts and row.account_id not in new:
            new[row.account_id] = CardAccount(account_id=row.account_id, home_country=row.home_country,
                                              holder_name=row.holder_name)
    for account in CardAccount.objects.bulk_create(list(new.values()), batch_size=1000):
        accounts[account.account_id] = account
    txns = [
        Transaction(transaction_id=row.transaction_id, account=accounts[row.account_id], card_last4=row.card_last4,
                    amount=row.amount, currency=row.currency, merchant=row.merchant, mcc=row.mcc,
                    country=row.country, channel=row.channel, device_id=row.device_id,
                    occurred_at=row.occurred_at, is_fraud=row.is_fraud, auth_result=row.auth_result,
                    three_ds_result=row.three_ds_result, avs_result=row.avs_result, cvv_result=row.cvv_result,
                    ip_address=str(row.ip_address) if row.ip_address else None, email_hash=row.email_hash,
                    bin=row.bin, merchant_id=row.merchant_id,
                    settlement_amount=(row.amount * rates[row.currency]).quantize(CENT))
        for row in valid
    ]
    # The velocity counters count them (in this transaction: never stale), and each keeps the
    # aggregates the active rules read as they stood when it arrived.
    observed = [rule_row(t) for t in txns]
    for txn, values in zip(txns, aggregates.observe(observed, aggs), strict=True):
        txn.aggregates = values
    try:
        created = Transaction.objects.bulk_create(txns, batch_size=1000)
    except IntegrityError:  # stored meanwhile by a concurrent request: not counted twice in Redis
        aggregates.forget(observed, aggs)
        raise
    if audit:
        audit_record(actor=actor, action="txn.transactions_imported", data={
            "via": via, "count": len(created), "accounts": sorted(accounts)[:50],
            "first": valid[0].transaction_id, "last": valid[-1].transaction_id})
    # The detection rules run on them in the worker, once they are committed.
    evaluate_after_commit([t.pk for t in created])
    return created


def rule_row(txn: Transaction) -> dict:
    """The row the detection rules, the aggregates and the list lookups read
    (casework.transactions.rules), from a transaction not necessarily saved yet (its account is)."""
    from casework.transactions.rules import row_of

    return row_of(amount=txn.settlement_amount if txn.settlement_amount is not None else txn.amount, mcc=txn.mcc,
                  country=txn.country, channel=txn.channel, occurred_at=txn.occurred_at.astimezone(UTC),
                  home_country=txn.account.home_country, is_fraud=txn.is_fraud, currency=txn.currency,
                  auth_result=txn.auth_result, three_ds=txn.three_ds_result, avs=txn.avs_result,
                  cvv=txn.cvv_result, bin=txn.bin, merchant_id=txn.merchant_id, account=txn.account_id,
                  card_last4=txn.card_last4, device_id=txn.device_id, ip_address=txn.ip_address,
                  email_hash=txn.email_hash, merchant=txn.merchant, card_account=txn.account.account_id)


def _refuse_duplicates_and_unknown_accounts(valid: list[TransactionIn], known: set[str], *, numbers,
                                            label, look_for_stored: bool = True) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    ids = [row.transaction_id for row in valid]
    stored = (set(Transaction.objects.filter(transaction_id__in=ids).values_list("transaction_id", flat=True))
              if look_for_stored else set())
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


def settlement_rates(currencies) -> dict[str, Decimal]:
    """Rate to the settlement currency for each currency that has one (the settlement currency is 1)."""
    others = set(currencies) - {settings.SETTLEMENT_CURRENCY}
    rates = {c.currency: c.rate for c in CurrencyRate.objects.filter(currency__in=others)} if others else {}
    rates[settings.SETTLEMENT_CURRENCY] = Decimal(1)
    return rates
