"""Exactly-once effects of an approved call (issue 46): the key its effects are written under.

A person's approval resumes the run, which makes the approved call. If the worker dies after the
call's effect (an e-mail queued, an event in the outbox) but before the run saves the step, the
next worker makes the call again from the same saved step. To keep that from acting twice, the
runtime runs an approved call inside `effect_scope("approval-<pause id>")`, and each effect the
call makes takes the next key of that scope (`effect_key_next()`: "approval-12/1", "approval-12/2",
... in the order the call makes them, the same order when it is made again). A service that
writes an effect stores the key under a unique constraint and, finding it there already, returns
what was written the first time instead of acting again (casework.cases.notifications.services
notification_send). Outside a scope the key is None and nothing changes.

The scope is a context variable: it follows the call onto the tool's pool thread
(agents.runtime.tools copies the context), and ends with it.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class _Scope:
    base: str
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))


_scope: ContextVar[_Scope | None] = ContextVar("effect_scope", default=None)


@contextlib.contextmanager
def effect_scope(base: str | None):
    """Effects made inside take keys under `base` (None: no keys, as outside any scope)."""
    token = _scope.set(_Scope(base) if base else None)
    try:
        yield
    finally:
        _scope.reset(token)


def effect_key_next() -> str | None:
    """The next effect's key in the current scope, or None outside one."""
    scope = _scope.get()
    return None if scope is None else f"{scope.base}/{next(scope.counter)}"


def approval_effect_base(answer: dict | None) -> str | None:
    """The scope of an approved call's effects, from the person's answer (pauses_answered)."""
    if answer and answer.get("approved") and answer.get("pause"):
        return f"approval-{answer['pause']}"
    return None
