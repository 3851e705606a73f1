"""Encryption at rest for secrets and special-category fields (issue 42).

Values are encrypted with Fernet (AES-128-CBC and HMAC-SHA256, from `cryptography`, which the
project already uses for its checkpoint signatures) through a MultiFernet built from
settings.FIELD_ENCRYPTION_KEYS, newest key first: the newest encrypts, every key decrypts. So
a rotation is: put a new key first, keep the old ones, run `manage.py rotate_field_keys`
(`field_keys_rotate`: every encrypted value re-encrypted under the newest key, audited), then
drop the old keys. Until the command has run, old ciphertexts stay readable.

The model fields (casework.security.fields) encrypt in get_prep_value and decrypt in
from_db_value, so the ORM reads and writes plaintext and the database only ever holds
ciphertext. A Fernet token is random each time: an encrypted column cannot be filtered,
ordered or made unique by its value; code reads such rows by another key and compares in
Python.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction

logger = logging.getLogger(__name__)

# Every Fernet token starts with its version byte, 0x80, which base64 writes as "gA".
TOKEN_PREFIX = "gAAAAA"


class FieldDecryptionError(ImproperlyConfigured):
    """A stored value no configured key decrypts: a key was dropped before rotate_field_keys ran
    (or the value was never encrypted)."""


@functools.lru_cache(maxsize=8)
def _multi(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS is empty.")
    return MultiFernet([Fernet(key.encode()) for key in keys])


def field_fernet() -> MultiFernet:
    """The MultiFernet of the configured keys (built once per key list)."""
    return _multi(tuple(settings.FIELD_ENCRYPTION_KEYS))


def field_key_generate() -> str:
    """A new Fernet key, for FIELD_ENCRYPTION_KEYS."""
    return Fernet.generate_key().decode()


def encrypt_text(value: str) -> str:
    return field_fernet().encrypt(value.encode("utf-8")).decode("ascii")


def decrypt_text(token: str, *, where: str = "") -> str:
    try:
        return field_fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeEncodeError):
        raise FieldDecryptionError(
            f"An encrypted value{f' ({where})' if where else ''} cannot be decrypted with FIELD_ENCRYPTION_KEYS: "
            "the key it was encrypted with is missing (keep old keys until rotate_field_keys has run).") from None


def encrypted_fields() -> list[tuple[Any, list[Any]]]:
    """(model, its encrypted fields) for every installed model that has any (the fields of
    casework.security.fields say so with `encrypted = True`; that module imports this one)."""
    found = []
    for model in apps.get_models():
        fields = [f for f in model._meta.concrete_fields if getattr(f, "encrypted", False)]
        if fields:
            found.append((model, fields))
    return found


def _rotate_table(table: str, pk: str, column: str, batch: int) -> tuple[int, int]:
    """Re-encrypt one column under the newest key, in batches by primary key; (values, rewritten)."""
    fernet = field_fernet()
    qn = connection.ops.quote_name
    seen = rewritten = 0
    last = None
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            where = f"WHERE {qn(pk)} > %s " if last is not None else ""
            cursor.execute(f"SELECT {qn(pk)}, {qn(column)} FROM {qn(table)} {where}ORDER BY {qn(pk)} LIMIT {batch}",
                           [last] if last is not None else [])
            rows = cursor.fetchall()
            updates = []
            for key, value in rows:
                if not value:
                    continue
                seen += 1
                try:
                    token = fernet.rotate(value.encode("ascii"))
                except InvalidToken:
                    raise FieldDecryptionError(
                        f"{table}.{column} of row {key} cannot be decrypted with FIELD_ENCRYPTION_KEYS; nothing after "
                        "it was re-encrypted. Put back the key it was encrypted with.") from None
                updates.append((token.decode("ascii"), key))
            if updates:
                cursor.executemany(f"UPDATE {qn(table)} SET {qn(column)} = %s WHERE {qn(pk)} = %s", updates)
                rewritten += len(updates)
        if len(rows) < batch:
            return seen, rewritten
        last = rows[-1][0]


def field_keys_rotate(*, actor: Any, batch: int = 500) -> dict[str, int]:
    """Re-encrypt every encrypted value under the newest key (MultiFernet.rotate); return the
    number of values per `app_label.model.field`.

    Steps, per encrypted column: read the rows in primary-key order, `batch` at a time; rotate
    each non-empty value (decrypted with whichever key opens it, encrypted with the first);
    write the batch back in the same short transaction. A value no key opens stops the run with
    FieldDecryptionError (what was rotated before it stays rotated, and still decrypts). Then one
    audit entry records which columns and how many values, never a value or a key.
    """
    from audit.services import audit_record

    counts: dict[str, int] = {}
    for model, fields in encrypted_fields():
        for field in fields:
            seen, _ = _rotate_table(model._meta.db_table, model._meta.pk.column, field.column, batch)
            counts[f"{model._meta.label_lower}.{field.name}"] = seen
    with transaction.atomic():
        audit_record(actor=actor, action="security.field_keys_rotated",
                     data={"values": counts, "keys_configured": len(settings.FIELD_ENCRYPTION_KEYS)})
    logger.info("Field encryption keys rotated: %s values re-encrypted.", sum(counts.values()))
    return counts


def _convert_existing(schema_editor, table: str, columns: list[str], pk: str, convert, *, batch: int = 2000) -> None:
    """Rewrite each value of these columns that `convert` changes (it returns None to leave it),
    reading `batch` rows at a time in primary-key order with raw SQL (the model state's field
    would try to decrypt them): a table of millions of agent calls is never held in memory."""
    qn = schema_editor.quote_name
    with schema_editor.connection.cursor() as cursor:
        for column in columns:
            last = None
            while True:
                where = f"WHERE {qn(pk)} > %s " if last is not None else ""
                cursor.execute(f"SELECT {qn(pk)}, {qn(column)} FROM {qn(table)} {where}ORDER BY {qn(pk)} LIMIT {batch}",
                               [last] if last is not None else [])
                rows = cursor.fetchall()
                updates = [(new, key) for key, value in rows if (new := convert(value)) is not None]
                if updates:
                    cursor.executemany(f"UPDATE {qn(table)} SET {qn(column)} = %s WHERE {qn(pk)} = %s", updates)
                if len(rows) < batch:
                    break
                last = rows[-1][0]


def encrypt_existing(schema_editor, table: str, columns: list[str], pk: str = "id") -> None:
    """For a data migration: encrypt the plaintext values of these columns (those that are not
    Fernet tokens already, and not empty)."""
    _convert_existing(schema_editor, table, columns, pk, lambda value: encrypt_text(str(value)) if value not in (
        None, "") and not str(value).startswith(TOKEN_PREFIX) else None)


def decrypt_existing(schema_editor, table: str, columns: list[str], pk: str = "id") -> None:
    """For a data migration reversed: the plaintext of these columns back (encrypt_existing undone)."""
    _convert_existing(schema_editor, table, columns, pk, lambda value: decrypt_text(
        value, where=table) if value and str(value).startswith(TOKEN_PREFIX) else None)


def encrypt_columns(table: str, *columns: str):
    """A RunPython operation's two functions: encrypt these columns' existing values, and back."""

    def forward(apps, schema_editor):
        encrypt_existing(schema_editor, table, list(columns))

    def backward(apps, schema_editor):
        decrypt_existing(schema_editor, table, list(columns))

    return forward, backward
