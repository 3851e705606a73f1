"""Customers and knowledge-base articles to and from CSV. An import is all or nothing: every
row is checked first, and one bad row refuses the whole file with errors that name the row
(the header is row 1) and the field."""

from __future__ import annotations

import csv
import io

from django.core.exceptions import ValidationError
from django.db import transaction

from casework.support.models import Customer, KBArticle

CUSTOMER_COLUMNS = ["customer_id", "name", "email", "plan", "tenure_months", "seats", "region", "vip"]
KB_COLUMNS = ["article_id", "title", "category", "body"]
_TRUE = {"true", "1", "yes", "y"}
_FALSE = {"false", "0", "no", "n", ""}


class CsvRefused(Exception):
    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors[:5]))
        self.errors = errors


def _rows(file, columns: list[str], required: list[str]) -> list[tuple[int, dict]]:
    text = file.read()
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise CsvRefused(["The file is not UTF-8 text."]) from None
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in required if c not in header]
    if missing:
        raise CsvRefused([f"Row 1 (header): missing column(s) {', '.join(missing)}; expected {', '.join(columns)}."])
    unknown = [h for h in header if h not in columns]
    if unknown:
        raise CsvRefused([f"Row 1 (header): unknown column(s) {', '.join(unknown)}; expected {', '.join(columns)}."])
    return [(n, {k.strip(): (v or "").strip() for k, v in row.items() if k}) for n, row in enumerate(reader, start=2)]


def _check(instance, row: int, errors: list[str], exclude: list[str] | None = None) -> None:
    try:
        instance.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        for field, messages in exc.message_dict.items():
            errors += [f"Row {row}, {field}: {m}" for m in messages]


def _parse_customer(n: int, row: dict, errors: list[str]) -> dict:
    data = {k: row[k] for k in CUSTOMER_COLUMNS if k in row}
    for field in ("tenure_months", "seats"):
        if field in data:
            try:
                data[field] = int(data[field] or (1 if field == "seats" else 0))
            except ValueError:
                errors.append(f"Row {n}, {field}: {data[field]!r} is not a whole number.")
    if "vip" in data:
        value = data["vip"].lower()
        if value not in _TRUE | _FALSE:
            errors.append(f"Row {n}, vip: {data['vip']!r} is not true or false.")
        data["vip"] = value in _TRUE
    return data


def import_customers(*, actor, file) -> int:
    from casework.support.services import customer_save

    errors: list[str] = []
    parsed, seen = [], {}
    for n, row in _rows(file, CUSTOMER_COLUMNS, ["customer_id", "plan"]):
        data = _parse_customer(n, row, errors)
        if data.get("customer_id") in seen:
            errors.append(f"Row {n}, customer_id: {data['customer_id']!r} is also on row {seen[data['customer_id']]}.")
        seen[data.get("customer_id")] = n
        _check(Customer(**{k: v for k, v in data.items() if isinstance(v, (str, bool, int))}), n, errors)
        parsed.append(data)
    if errors:
        raise CsvRefused(errors)
    with transaction.atomic():
        for data in parsed:
            customer_save(actor=actor, data=data)
    return len(parsed)


def import_kb_articles(*, actor, file) -> int:
    from casework.support.services import kb_article_save

    errors: list[str] = []
    parsed, seen = [], {}
    for n, row in _rows(file, KB_COLUMNS, KB_COLUMNS):
        if row.get("article_id") in seen:
            errors.append(f"Row {n}, article_id: {row['article_id']!r} is also on row {seen[row['article_id']]}.")
        seen[row.get("article_id")] = n
        _check(KBArticle(**row), n, errors)
        parsed.append(row)
    if errors:
        raise CsvRefused(errors)
    with transaction.atomic():
        for row in parsed:
            kb_article_save(actor=actor, data=row)
    return len(parsed)


def export_customers(out) -> int:
    writer = csv.writer(out)
    writer.writerow(CUSTOMER_COLUMNS)
    rows = Customer.objects.order_by("customer_id").values_list(*CUSTOMER_COLUMNS)
    count = 0
    for row in rows:
        writer.writerow(["true" if v is True else "false" if v is False else v for v in row])
        count += 1
    return count


def export_kb_articles(out) -> int:
    writer = csv.writer(out)
    writer.writerow(KB_COLUMNS)
    count = 0
    for row in KBArticle.objects.order_by("article_id").values_list(*KB_COLUMNS):
        writer.writerow(row)
        count += 1
    return count
