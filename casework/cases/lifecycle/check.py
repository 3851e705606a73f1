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
