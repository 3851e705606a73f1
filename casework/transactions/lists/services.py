"""Every change to allow and deny lists: checked, written and audited in one transaction.
Investigators, managers and admins change them (a list entry takes effect at once: a deny
entry blocks the next transaction carrying the value)."""

from __future__ import annotations

import hashlib
import ipaddress
import re
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.errors import Conflict
from casework.transactions.lists.models import ListEntry, ValueList

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,59}$")


def _choice(name: str, value, choices) -> str:
    if value not in choices.values:
        raise ValidationError({name: [f"Use one of {', '.join(choices.values)}; not {value!r}."]})
    return value


def value_normalise(field: str, value) -> str:
    """The value as transactions carry it (an IP in its canonical form, an e-mail given in
    clear turned into its hash), or a ValidationError naming `value`."""
    text = str(value if value is not None else "").strip()
    if not text or len(text) > 128:
        raise ValidationError({"value": ["Give a value of 1 to 128 characters."]})
    if field == "ip":
        try:
            return str(ipaddress.ip_address(text))
        except ValueError:
            raise ValidationError({"value": [f"{text!r} is not an IP address."]})
    if field == "email_hash":
        if "@" in text:
            return hashlib.sha256(text.lower().encode()).hexdigest()
        if not re.fullmatch(r"[0-9a-f]{64}", text):
            raise ValidationError({"value": ["Give the SHA-256 (64 hex digits) of the lower-cased e-mail, "
                                             "or the e-mail itself (only its hash is stored)."]})
    if field == "bin" and not re.fullmatch(r"\d{6,8}", text):
        raise ValidationError({"value": ["A BIN is 6 to 8 digits."]})
    return text


def _list_data(value_list: ValueList) -> dict:
    return {"list": value_list.name, "kind": value_list.kind, "field": value_list.field}


@transaction.atomic
def value_list_create(*, actor, name: str, kind: str, field: str, description: str = "",
                      now: datetime | None = None) -> ValueList:
    name = str(name or "").strip().lower()
    if not NAME.fullmatch(name):
        raise ValidationError({"name": ["Use lower-case letters, digits, - and _ (up to 60), e.g. deny-devices."]})
    if ValueList.objects.filter(name=name).exists():
        raise ValidationError({"name": [f"A list named {name!r} exists."]})
    value_list = ValueList(name=name, kind=_choice("kind", kind, ValueList.Kind),
                           field=_choice("field", field, ValueList.Field), description=str(description or "")[:2000],
                           created_by=actor if getattr(actor, "pk", None) else None, created_at=now or timezone.now())
    value_list.full_clean(exclude=["created_by"])
    value_list.save()
    audit_record(actor=actor, action="txn.list_created", obj=value_list, data=_list_data(value_list))
    return value_list


@transaction.atomic
def list_entry_add(*, actor, value_list: ValueList, value, expires_at: datetime | None = None, note: str = "",
                   now: datetime | None = None) -> ListEntry:
    """Put a value on a list (or renew its expiry and note if it is there)."""
    now = now or timezone.now()
    value = value_normalise(value_list.field, value)
    if expires_at is not None and expires_at <= now:
        raise ValidationError({"expires_at": ["The expiry must be in the future."]})
    entry, created = ListEntry.objects.select_for_update().get_or_create(
        value_list=value_list, value=value,
        defaults={"expires_at": expires_at, "note": str(note or "")[:500],
                  "added_by": actor if getattr(actor, "pk", None) else None, "added_at": now})
    if not created:
        entry.expires_at, entry.note = expires_at, str(note or "")[:500]
        entry.save(update_fields=["expires_at", "note"])
    audit_record(actor=actor, action="txn.list_entry_added" if created else "txn.list_entry_renewed", obj=entry,
                 data={**_list_data(value_list), "value": value,
                       "expires_at": expires_at.isoformat() if expires_at else None, "note": entry.note})
    return entry


@transaction.atomic
def list_entry_remove(*, actor, value_list: ValueList, value) -> None:
    value = value_normalise(value_list.field, value)
    entry = ListEntry.objects.select_for_update().filter(value_list=value_list, value=value).first()
    if entry is None:
        raise Conflict(f"{value} is not on {value_list.name}.", code="not_listed")
    audit_record(actor=actor, action="txn.list_entry_removed", obj=entry,
                 data={**_list_data(value_list), "value": value, "added_at": entry.added_at.isoformat()})
    entry.delete()
