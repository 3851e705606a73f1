"""Finding a data subject's identifiers in stored values and replacing them by a pseudonym
(casework.privacy.erasure).

`Identifiers` holds the strings in clear by which records name the subject (a name, an e-mail
address, an account or customer id, a card number) as two kinds of pattern:

- strong: whole identifiers, matched without regard to case and not inside a longer word or
  number (ACC-7 does not match in ACC-70); safe to look for in every table, and what a global
  sweep searches the database for;
- weak: the parts of a name ("Ada", "Lovelace"), matched as whole words, only in rows already
  known to be about the subject (the rows of the subject's cases): "Dear Ada" goes, the word
  "Ada" in someone else's case stays.

A card number is matched in any spacing (4111 1111 1111 4242, 4111-1111-...), and a card
stored as BIN and last four (411111******4242) matches the full numbers that reduce to it. In
the rows of the subject's own cases (weak), every full card number (a Luhn-valid 13 to 19 digit
number starting 2 to 6) goes as well: no entity holds a full number (casework.entities.kinds),
so the one a customer wrote in their message can only be found so.

`scrub(value)` replaces every match inside a string, or inside the strings (values and keys)
of a JSON value, and says whether anything changed; applied twice it changes nothing the second
time (the pseudonym matches no pattern), which is what makes an erasure's batches idempotent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MIN_STRONG = 4  # shorter strings are not identifiers (and would match everywhere)
MIN_NAME_PART = 3
_CARD_STORED = re.compile(r"^(\d{6})\*+(\d{4})$")
_PAN = re.compile(r"^\d(?:[ -]?\d){11,18}$")


def _boundary(body: str) -> str:
    return rf"(?<![A-Za-z0-9]){body}(?![A-Za-z0-9])"


def _literal(text: str) -> str:
    # Runs of whitespace in a name match any run (a name wrapped over a line in an e-mail).
    return r"\s+".join(re.escape(part) for part in text.split())


def _card_body(bin_: str, last4: str) -> str:
    """Any 12-19 digit number, spaced or dashed, that starts with the BIN and ends with the last four."""
    sep = r"[ -]?"
    head = sep.join(bin_)
    tail = sep.join(last4)
    return rf"{head}(?:{sep}\d){{2,9}}{sep}{tail}"


@dataclass
class Identifiers:
    """What names one subject (see the module docstring), and the pseudonym that replaces it."""

    pseudonym: str
    strong: list[str] = field(default_factory=list)
    name_parts: list[str] = field(default_factory=list)
    cards: list[tuple[str, str]] = field(default_factory=list)  # (BIN, last four)

    def __post_init__(self) -> None:
        self._compiled: dict[bool, re.Pattern | None] = {}

    @classmethod
    def build(cls, *, pseudonym: str, values: list[str], names: list[str] = ()) -> Identifiers:
        """From the subject's identifiers in clear (`values`) and which of them are people's
        names (`names`, whose parts become weak patterns)."""
        strong, cards = set(), set()
        for value in values:
            value = " ".join(str(value or "").split())
            if len(value) < MIN_STRONG:
                continue
            stored = _CARD_STORED.match(value)
            if stored:
                cards.add((stored[1], stored[2]))
            elif _PAN.match(value):
                digits = re.sub(r"[ -]", "", value)
                cards.add((digits[:6], digits[-4:]))
            strong.add(value)
        parts = {p for name in names for p in re.findall(r"[^\W\d_]+", name or "") if len(p) >= MIN_NAME_PART}
        return cls(pseudonym=pseudonym, strong=sorted(strong, key=lambda s: (-len(s), s)),
                   name_parts=sorted(parts, key=lambda s: (-len(s), s)), cards=sorted(cards))

    def as_json(self) -> dict:
        return {"pseudonym": self.pseudonym, "strong": self.strong, "name_parts": self.name_parts,
                "cards": [list(c) for c in self.cards]}

    @classmethod
    def from_json(cls, data: dict) -> Identifiers:
        return cls(pseudonym=data["pseudonym"], strong=list(data["strong"]), name_parts=list(data["name_parts"]),
                   cards=[tuple(c) for c in data["cards"]])

    def pattern(self, *, weak: bool) -> re.Pattern | None:
        if weak not in self._compiled:
            bodies = [_card_body(b, last4) for b, last4 in self.cards]
            bodies += [_literal(s) for s in self.strong]
            if weak:
                bodies += [re.escape(p) for p in self.name_parts]
            self._compiled[weak] = (re.compile("|".join(_boundary(f"(?:{b})") for b in bodies), re.IGNORECASE)
                                    if bodies else None)
        return self._compiled[weak]

    def scrub(self, value: Any, *, weak: bool = True) -> tuple[Any, bool]:
        """`value` with every match replaced by the pseudonym (strings inside JSON too), and
        whether anything changed."""
        pattern = self.pattern(weak=weak)
        if pattern is None:
            return value, False
        return _scrub(value, pattern, self.pseudonym, pans=weak)

    def found_in(self, value: Any, *, weak: bool = True) -> bool:
        return self.scrub(value, weak=weak)[1]

    def search_terms(self) -> list[str]:
        """Plain substrings a database search may look for (case-insensitively) to find rows
        that might hold a strong identifier: each one, and for a card its BIN (the row is then
        read and matched in Python)."""
        return sorted(set(self.strong) | {b for b, _ in self.cards})


_ANY_PAN = re.compile(r"(?<![A-Za-z0-9])[2-6]\d{3}(?:[ -]?\d){9,15}(?![A-Za-z0-9])")


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _pans_replaced(text: str, pseudonym: str) -> str:
    def replace(m: re.Match) -> str:
        digits = re.sub(r"[ -]", "", m.group(0))
        return pseudonym if 13 <= len(digits) <= 19 and luhn_valid(digits) else m.group(0)

    return _ANY_PAN.sub(replace, text)


def _scrub(value: Any, pattern: re.Pattern, pseudonym: str, pans: bool = False) -> tuple[Any, bool]:
    if isinstance(value, str):
        new = pattern.sub(pseudonym, value)
        if pans:
            new = _pans_replaced(new, pseudonym)
        return new, new != value
    if isinstance(value, list):
        changed, out = False, []
        for item in value:
            new, c = _scrub(item, pattern, pseudonym, pans)
            out.append(new)
            changed |= c
        return out, changed
    if isinstance(value, dict):
        changed, out = False, {}
        for key, item in value.items():
            new_key, ck = _scrub(key, pattern, pseudonym, pans) if isinstance(key, str) else (key, False)
            new, c = _scrub(item, pattern, pseudonym, pans)
            out[new_key] = new
            changed |= c or ck
        return out, changed
    return value, False


def scrub_all(value: Any, subjects: list[Identifiers], *, weak: bool = True) -> tuple[Any, bool]:
    """`value` scrubbed of every subject of a request in turn."""
    changed = False
    for ids in subjects:
        value, c = ids.scrub(value, weak=weak)
        changed |= c
    return value, changed
