"""What the restore drill (manage.py verify_restore) checks besides the audit chain and its
checkpoints: an app above the platform whose data lives partly outside the database (the
evidence files) registers a check from its AppConfig.ready. Ops names none of them."""

from __future__ import annotations

from collections.abc import Callable

# Each returns (ok, what it found): a line for the report when ok, the problem otherwise.
RESTORE_CHECKS: list[Callable[[], tuple[bool, str]]] = []


def restore_check_register(check: Callable[[], tuple[bool, str]]) -> None:
    if check not in RESTORE_CHECKS:
        RESTORE_CHECKS.append(check)
