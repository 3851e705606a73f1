"""Model fields stored encrypted (casework.security.encryption): the ORM reads and writes
plaintext, the column holds a Fernet token (text).

A small field of our own rather than a package: django-cryptography and
django-fernet-fields, the usual ones, are unmaintained (no release for years, no support for
current Django), and what they do is two methods on a field. `cryptography` does the
cryptography; these classes only convert.

An empty string stays empty (there is nothing to hide, and `explanation != ""` constraints
keep their meaning) and NULL stays NULL. Ciphertext is random, so filtering, ordering or a
unique constraint on such a column compares tokens, not values: read the rows by another key
and compare in Python.
"""

from __future__ import annotations

import datetime as dt
import json

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from casework.security.encryption import decrypt_text, encrypt_text


class EncryptedMixin:
    """Encrypts what to_db_text gives in get_prep_value; decrypts and from_db_text's it in
    from_db_value."""

    encrypted = True  # what casework.security.encryption.encrypted_fields looks for

    def to_db_text(self, value) -> str:
        return str(value)

    def from_db_text(self, text: str):
        return text

    def get_internal_type(self) -> str:
        return "TextField"

    def get_prep_value(self, value):
        if value is None or value == "":
            return value
        if hasattr(value, "resolve_expression"):
            return value
        return encrypt_text(self.to_db_text(self.to_python(value)))

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        return self.from_db_text(decrypt_text(value, where=f"{self.model._meta.db_table}.{self.column}"))


class EncryptedTextField(EncryptedMixin, models.TextField):
    """A TextField stored encrypted (webhook secrets, an explanation quoting a health fact)."""

    def to_python(self, value):
        return value if value is None or isinstance(value, str) else str(value)


class EncryptedDateField(EncryptedMixin, models.DateField):
    """A DateField stored encrypted as its ISO text (the dates of an absence)."""

    def db_type(self, connection):
        return models.TextField().db_type(connection)

    def to_db_text(self, value) -> str:
        return value.isoformat()

    def from_db_text(self, text: str):
        return dt.date.fromisoformat(text)

    def get_db_prep_value(self, value, connection, prepared=False):
        return value if prepared else self.get_prep_value(value)


class EncryptedJSONField(EncryptedMixin, models.JSONField):
    """JSON stored encrypted as its text (a claim's validation: the records it checked). A
    JSONField to forms and serializers; a text column to the database."""

    def db_type(self, connection):
        return models.TextField().db_type(connection)

    def get_prep_value(self, value):
        if value is None or hasattr(value, "resolve_expression"):
            return value
        return encrypt_text(json.dumps(value, cls=self.encoder or DjangoJSONEncoder, sort_keys=True))

    def get_db_prep_value(self, value, connection, prepared=False):
        return value if prepared else self.get_prep_value(value)

    def get_db_prep_save(self, value, connection):
        return self.get_db_prep_value(value, connection)

    def from_db_text(self, text: str):
        return json.loads(text)
