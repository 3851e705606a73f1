"""CSV import of card transactions: all or nothing, errors naming the file line and field."""

from __future__ import annotations

import csv
import io

from django.core.exceptions import ValidationError

from casework.transactions.ingest import transactions_import

COLUMNS = ("transaction_id", "account_id", "card_last4", "amount", "currency", "merchant", "mcc", "country",
           "channel", "device_id", "occurred_at", "home_country", "holder_name", "is_fraud")
REQUIRED = COLUMNS[:9] + ("occurred_at",)


def error_lines(exc: ValidationError) -> list[str]:
    """Each error with the line and field it names ("line 3: amount: ...")."""
    if not hasattr(exc, "error_dict"):
        return list(exc.messages)
    return [message if key == "__all__" else f"{key}: {message}"
            for key, messages in exc.message_dict.items() for message in messages]


def import_csv(*, actor, text: str, via: str = "csv_upload"):
    """Parse and import a CSV file (header row first; line numbers count it as line 1)."""
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in header]
    unknown = [c for c in header if c not in COLUMNS]
    if missing or unknown:
        problems = ([f"missing column(s): {', '.join(missing)}"] if missing else []) + \
                   ([f"unknown column(s): {', '.join(unknown)}"] if unknown else [])
        raise ValidationError({"__all__": [f"Line 1 (header): {'; '.join(problems)}."]})
    rows, numbers = [], []
    for row in reader:
        cleaned = {k: v for k, v in row.items() if k is not None and v not in (None, "")}
        if "is_fraud" in cleaned:
            cleaned["is_fraud"] = cleaned["is_fraud"].strip().lower() in ("1", "true", "yes")
        rows.append(cleaned)
        numbers.append(reader.line_num)
    return transactions_import(actor=actor, rows=rows, via=via, numbers=numbers, label="line")
