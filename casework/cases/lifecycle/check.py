"""The check every declared move passes before anything is written. Apart from the transition
service (services.py) because the case's own services check their moves too, and the
transition service calls them: one module each way would be a circle."""

from __future__ import annotations

from typing import Any

from casework.cases.lifecycle.table import Lifecycle, actor_kind
from casework.errors import Conflict, DomainError


def transition_check(lifecycle: Lifecycle, *, actor: Any, source: str, target: str, reference: str = "") -> None:
    """Refuse (DomainError for an undeclared state, Conflict, a 409, for a move the table does
    not have or that this kind of actor may not make), naming the from- and to-state."""
    if not lifecycle.has_state(target):
        raise DomainError(f"{target!r} is not a state of {lifecycle.label}.", code="unknown_status")
    where = f"{reference} " if reference else ""
    move = lifecycle.move(source, target)
    if move is None:
        raise Conflict(f"{where}cannot go from {lifecycle.label_of(source)} to {lifecycle.label_of(target)}.",
                       code="transition_refused")
    kind = actor_kind(actor)
    if kind not in move.by:
        allowed = " or ".join(sorted(move.by))
        raise Conflict(f"{where}cannot go from {lifecycle.label_of(source)} to {lifecycle.label_of(target)} "
                       f"on the word of {'an' if kind == 'agent' else 'a'} {kind}: only a {allowed} makes that move.",
                       code="transition_not_allowed")


def fact_check(lifecycle: Lifecycle, *, target: str, fact: Any, reference: str = "") -> None:
    """Refuse (Conflict, code "no_fact") to enter a state that claims an effect outside
    Casework without the record of that effect (State.fact), naming the state and the fact."""
    state = lifecycle.state(target)
    if state.fact is None:
        return
    why = state.fact.check(fact)
    if why:
        where = f"{reference} " if reference else ""
        raise Conflict(f"{where}cannot be {state.label!r} without its fact ({state.fact.says}): {why}.",
                       code="no_fact")
