"""The kinds of entity and how each value is normalised before it is stored.

Privacy: an entity holds only what a case already holds, reduced where the source is
sensitive. An email is stored as a keyed hash with a masked display (j***@example.com); a card
as its BIN and last four only (a full card number is reduced, never stored); the rest as the
record holds them, normalised so that the same thing written two ways is one entity.
"""

from __future__ import annotations

import ipaddress
import re

from django.core.exceptions import ValidationError
from django.utils.crypto import salted_hmac

KINDS: dict[str, str] = {
    "account": "Account",
    "card": "Card",
    "customer": "Customer",
    "employee": "Employee",
    "email": "Email",
    "phone": "Phone",
    "ip": "IP address",
    "device": "Device",
    "merchant": "Merchant",
}
# Kinds compared without their case (names, not identifiers).
_CASELESS: set[str] = {"merchant"}
VALUE_MAX = 128


def kind_register(kind: str, label: str, *, caseless: bool = False) -> None:
    """A kind of entity a case type's records name, beyond the shared ones above (from the
    type's AppConfig.ready, before it registers its Entities): stored as the record holds it,
    whitespace tidied, and compared without case when `caseless` (a name rather than an id).
    Registering it again is harmless; another label under a taken kind is refused."""
    if KINDS.get(kind, label) != label:
        raise ValueError(f"The entity kind {kind!r} is registered already, as {KINDS[kind]!r}.")
    if not kind.isidentifier() or len(kind) > 20:
        raise ValueError(f"An entity kind is a short lower-case name: not {kind!r}.")
    KINDS[kind] = label
    if caseless:
        _CASELESS.add(kind)


def kind_choices() -> list[tuple[str, str]]:
    """(kind, label) of every kind: Entity.kind's choices, read when asked for (a new kind needs
    no migration)."""
    return list(KINDS.items())

_CARD_MASKED = re.compile(r"^(\d{6})[\d*xX•.\u2026 -]*?(\d{4})$")
_CARD_SCOPED = re.compile(r"^([A-Za-z0-9_.:-]{1,64})/(?:\*+|x+|X+)?(\d{4})$")


def _invalid(kind: str, why: str) -> ValidationError:
    return ValidationError({"value": f"Not a valid {KINDS.get(kind, kind).lower()}: {why}."})


def _email(raw: str) -> tuple[str, str]:
    value = raw.strip().lower()
    local, at, domain = value.rpartition("@")
    if not at or not local or "." not in domain:
        raise _invalid("email", "expected name@domain")
    digest = salted_hmac("casework.entities.email", value, algorithm="sha256").hexdigest()
    return f"sha256:{digest}", f"{local[0]}***@{domain}"


def _card(raw: str) -> tuple[str, str]:
    """A BIN and last four ("411111******1111", or a full number reduced to them), or the last
    four scoped by the account that holds the card ("ACC-1/1111") when the BIN is not known."""
    value = raw.strip()
    digits = re.sub(r"[\s-]", "", value)
    if digits.isdigit():
        if not 12 <= len(digits) <= 19:
            raise _invalid("card", "a card number has 12 to 19 digits")
        return f"{digits[:6]}******{digits[-4:]}", f"{digits[:6]}…{digits[-4:]}"
    masked = _CARD_MASKED.match(value)
    if masked:
        return f"{masked[1]}******{masked[2]}", f"{masked[1]}…{masked[2]}"
    scoped = _CARD_SCOPED.match(value)
    if scoped:
        return f"{scoped[1]}/****{scoped[2]}", f"…{scoped[2]} on {scoped[1]}"
    raise _invalid("card", "give a BIN and last four, or <account>/<last four>")


def _phone(raw: str) -> tuple[str, str]:
    digits = re.sub(r"[^\d]", "", raw)
    if not 6 <= len(digits) <= 15:
        raise _invalid("phone", "6 to 15 digits")
    value = ("+" if raw.strip().startswith(("+", "00")) else "") + digits.removeprefix("00")
    return value, f"{value[:-4]}····{value[-2:]}" if len(value) > 6 else value


def _ip(raw: str) -> tuple[str, str]:
    try:
        value = str(ipaddress.ip_address(raw.strip()))
    except ValueError:
        raise _invalid("ip", "expected an IPv4 or IPv6 address") from None
    return value, value


def _plain(kind: str, raw: str, *, lower: bool) -> tuple[str, str]:
    display = " ".join(raw.split())
    if not display:
        raise _invalid(kind, "it is empty")
    return (display.lower() if lower else display), display


def normalise(kind: str, raw: str) -> tuple[str, str]:
    """(stored value, display) for a raw value of `kind`; ValidationError naming the field."""
    if kind not in KINDS:
        raise ValidationError({"kind": f"Choose one of: {', '.join(KINDS)}."})
    raw = str(raw or "")
    if kind == "email":
        value, display = _email(raw)
    elif kind == "card":
        value, display = _card(raw)
    elif kind == "phone":
        value, display = _phone(raw)
    elif kind == "ip":
        value, display = _ip(raw)
    else:
        # Identifiers keep their case (ACC-001 and acc-001 may differ upstream); names of
        # merchants and components are compared without it.
        value, display = _plain(kind, raw, lower=kind in _CASELESS)
    if len(value) > VALUE_MAX:
        raise _invalid(kind, f"at most {VALUE_MAX} characters")
    return value, display[:VALUE_MAX]
