"""Which errors interrupt a run instead of failing it: the ones a retry can get past (a
database restart, a lost connection). The runtime keeps no policy of its own about them (it
imports no project package): the agents app registers the project's check at start-up
(casework.db_transient.is_transient_db_error, from AgentsConfig.ready)."""

from __future__ import annotations

from collections.abc import Callable

_checks: list[Callable[[BaseException], bool]] = []


def transient_check_register(check: Callable[[BaseException], bool]) -> None:
    if check not in _checks:
        _checks.append(check)


def is_transient(exc: BaseException) -> bool:
    return any(check(exc) for check in _checks)
