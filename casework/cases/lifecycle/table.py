"""A lifecycle as data: its states (each with what it means and where it puts the shared
case in the queue) and the moves between them, each naming who may make it: a person, an
agent, or the system (a scheduled task, a worker's bookkeeping).

A state that says something happened outside Casework ("Reply sent", "Assessed", "notified")
declares the fact it rests on (`State.fact`): the record of that effect (an accepted e-mail,
a finished specialist, a delivered event). The transition service enters such a state only
when the mover hands it that record and the record holds (lifecycle_transition(fact=...));
`claims_without_fact` finds a state whose label claims an effect and names no fact.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

PERSON, AGENT, SYSTEM = "person", "agent", "system"
KINDS = (PERSON, AGENT, SYSTEM)


def actor_kind(actor: Any) -> str:
    """'person' for a user, 'agent' for "agent:<name>", 'system' for anything else (as the
    audit trail classifies actors)."""
    if actor is None or isinstance(actor, str):
        return AGENT if isinstance(actor, str) and actor.startswith("agent:") else SYSTEM
    return PERSON


@dataclass(frozen=True)
class Fact:
    """The record a claim rests on: a row of `record` ("app_label.Model") for which `holds`
    is true (e.g. an OutboundEmail whose state is sent). `says` is what that record proves,
    in words, shown beside the state on /lifecycles/."""

    record: str
    says: str
    holds: Callable[[Any], bool] | None = None

    def check(self, obj: Any) -> str:
        """"" when `obj` is this fact's record and it holds, else why not."""
        from django.apps import apps

        model = apps.get_model(self.record)
        if obj is None:
            return f"no {self.record} record was given"
        if not isinstance(obj, model):
            return f"{type(obj).__name__} is not a {self.record} record"
        if self.holds is not None and not self.holds(obj):
            return f"{self.record} #{obj.pk} does not show it ({self.says})"
        return ""


@dataclass(frozen=True)
class State:
    key: str
    label: str
    meaning: str
    # The shared Case.status this state puts the case in ("" for the shared table itself).
    case_status: str = ""
    # An end state: no move leaves it.
    final: bool = False
    # What the state says happened outside Casework ("the customer's mail server accepted the
    # reply"), and the record that shows it: a state with a claim is entered only with its fact.
    claim: str = ""
    fact: Fact | None = None


# Words that say an effect outside Casework happened. A label using one (not negated:
# "Reply drafted, not sent" claims nothing) claims it, and must name its fact.
CLAIM_WORDS = frozenset({"replied", "sent", "notified", "confirmed", "promoted", "assessed", "delivered",
                         "emailed"})
_NOT_A_CLAIM = frozenset({"not", "no", "never", "being", "un", "without", "awaiting", "to", "be"})


def claimed_words(text: str) -> list[str]:
    """The claim words `text` uses as claims: "Reply sent" -> ["sent"]; "Reply drafted, not
    sent", "Being assessed", "Reply not delivered" -> []."""
    words = re.findall(r"[a-z]+", (text or "").lower())
    return [w for i, w in enumerate(words) if w in CLAIM_WORDS and not (set(words[max(0, i - 2):i]) & _NOT_A_CLAIM)]


def claims_without_fact(lifecycle: Lifecycle) -> list[str]:
    """The states of `lifecycle` that claim an outside effect (their label's words, or a
    declared `claim`) and name no fact, as "key: why"."""
    found = []
    for state in lifecycle.states:
        words = claimed_words(state.label)
        if (words or state.claim) and state.fact is None:
            said = f"its label says {', '.join(repr(w) for w in words)}" if words else f"it claims {state.claim!r}"
            found.append(f"{lifecycle.key}.{state.key} ({state.label!r}): {said}, and it names no fact")
        elif state.fact is not None and not state.claim:
            found.append(f"{lifecycle.key}.{state.key} ({state.label!r}): it names a fact but says no claim")
    return found


@dataclass(frozen=True)
class Transition:
    source: str
    target: str
    by: frozenset[str]
    # Why the move exists, shown on the diagram page.
    note: str = ""


def move(source: str | Iterable[str], target: str, *by: str, note: str = "") -> list[Transition]:
    """Transitions from one state or several to `target`, made by the kinds of actor `by`."""
    sources = [source] if isinstance(source, str) else list(source)
    unknown = set(by) - set(KINDS)
    if unknown or not by:
        raise ValueError(f"A move names who makes it ({', '.join(KINDS)}), not {sorted(unknown) or 'nobody'}.")
    return [Transition(s, target, frozenset(by), note) for s in sources]


@dataclass
class Lifecycle:
    """One status field's table. `key` is the case type's key (or "case" for the shared
    status); `record` is "app_label.Model" of the row that holds `field`, with a `case`
    relation unless it is the Case itself."""

    key: str
    label: str
    record: str
    field: str
    initial: str
    states: tuple[State, ...]
    transitions: tuple[Transition, ...]
    audit_action: str
    _by_key: dict[str, State] = field(init=False, repr=False)
    _moves: dict[tuple[str, str], Transition] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_key = {s.key: s for s in self.states}
        if len(self._by_key) != len(self.states):
            raise ValueError(f"{self.key}: a state is declared twice.")
        if self.initial not in self._by_key:
            raise ValueError(f"{self.key}: the initial state {self.initial!r} is not declared.")
        self._moves = {}
        for t in self.transitions:
            for end in (t.source, t.target):
                if end not in self._by_key:
                    raise ValueError(f"{self.key}: the move {t.source} -> {t.target} names an undeclared state.")
            if self._by_key[t.source].final:
                raise ValueError(f"{self.key}: {t.source} is final, yet a move leaves it.")
            if (t.source, t.target) in self._moves:
                raise ValueError(f"{self.key}: the move {t.source} -> {t.target} is declared twice.")
            self._moves[(t.source, t.target)] = t

    def state(self, key: str) -> State:
        return self._by_key[key]

    def has_state(self, key: str) -> bool:
        return key in self._by_key

    def label_of(self, key: str) -> str:
        state = self._by_key.get(key)
        return state.label if state else key

    def move(self, source: str, target: str) -> Transition | None:
        return self._moves.get((source, target))

    def targets(self, source: str) -> list[str]:
        return [t.target for t in self.transitions if t.source == source]

    def reachable(self) -> set[str]:
        """The states reachable from the initial one."""
        seen, queue = {self.initial}, deque([self.initial])
        while queue:
            for target in self.targets(queue.popleft()):
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
        return seen

    def depths(self) -> dict[str, int]:
        """Each reachable state's distance (in moves) from the initial state."""
        depth, queue = {self.initial: 0}, deque([self.initial])
        while queue:
            here = queue.popleft()
            for target in self.targets(here):
                if target not in depth:
                    depth[target] = depth[here] + 1
                    queue.append(target)
        return depth

    def layers(self) -> dict[str, int]:
        """Each reachable state's column for a drawing: the longest chain of forward moves
        from the initial state, where a move back to a state on the current path (found
        depth-first, in the table's order) does not count. Every forward move then points right."""
        back: set[tuple[str, str]] = set()
        order: list[str] = []
        on_path: set[str] = set()
        done: set[str] = set()

        def visit(state: str) -> None:
            on_path.add(state)
            for target in self.targets(state):
                if target in on_path:
                    back.add((state, target))
                elif target not in done:
                    visit(target)
            on_path.discard(state)
            done.add(state)
            order.append(state)

        visit(self.initial)
        layer = dict.fromkeys(order, 0)
        for state in reversed(order):  # a topological order of the forward moves
            for target in self.targets(state):
                if (state, target) not in back:
                    layer[target] = max(layer[target], layer[state] + 1)
        return layer

    def claims(self) -> list[State]:
        """The states that claim an effect outside Casework (each with its fact)."""
        return [s for s in self.states if s.fact is not None or s.claim]

    def choices(self) -> list[tuple[str, str]]:
        return [(s.key, s.label) for s in self.states]


_REGISTRY: dict[str, Lifecycle] = {}


def lifecycle_register(lifecycle: Lifecycle) -> Lifecycle:
    """Register a lifecycle (from a case type's AppConfig.ready); registering again replaces it."""
    _REGISTRY[lifecycle.key] = lifecycle
    return lifecycle


def lifecycle_get(key: str) -> Lifecycle:
    return _REGISTRY[key]


def lifecycles() -> list[Lifecycle]:
    """Every registered lifecycle, the shared case's first."""
    return sorted(_REGISTRY.values(), key=lambda lc: (lc.key != "case", lc.key))
