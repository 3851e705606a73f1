"""Holds: what each process holds reserved in each case's ledger, so that a killed worker's
reservations and leases are given back.

A case's `reserved` counters are moved only together with the hold of the process that moves
them (models.BudgetHold, one row per process and case), in the same statement on PostgreSQL
(a data-modifying CTE) or the same transaction on SQLite (casework/budgets/ledger.py). So a
case's `reserved` is the sum of its holds, and what a process holds is known to the database,
not only to the process's memory:

- a reservation adds what the ledger took to the process's hold;
- a settlement gives back what the process still holds of it (all of it, unless the sweep gave
  the hold back meanwhile: then nothing twice), and adds the spend in any case;
- while a process holds anything it renews its holds (every CASE_BUDGET_HOLD_STALE_SECONDS / 4,
  from its writer: agents/runtime/charging.py), deleting those that fell to zero;
- the sweep (holds_release_gone, a beat task beside the runs' stale-run scan) gives back to
  their cases the holds of processes that are gone: a pid on this host that no longer runs
  (at once), or any hold not renewed for CASE_BUDGET_HOLD_STALE_SECONDS (a process on another
  host, or one frozen that long). Each is audited on its case (budget.hold_released) and the
  case's runs waiting in "Budget reached" go back to the queue where that makes room.

A process frozen past the deadline and then woken up finds its holds gone: its settlements
then give back nothing more (the sweep did) and its writer forgets the leases it held, which
the ledger no longer backs.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from casework.budgets.models import BudgetHold, CaseBudget

logger = logging.getLogger(__name__)

SCAN_LIMIT = 500  # holds given back per sweep, oldest first; the next sweep takes the rest

_me: tuple[int, str, str] | None = None  # (pid, holder, host) of this process


def holder() -> tuple[str, str, int]:
    """This process as a holder: (holder, host, pid); a new one after a fork (the child's
    holds are its own: the parent's reservations are not the child's to settle)."""
    global _me
    pid = os.getpid()
    if _me is None or _me[0] != pid:
        _me = (pid, f"{pid}-{secrets.token_hex(8)}", socket.gethostname()[:255])
    return _me[1], _me[2], pid


def _table() -> str:
    return connection.ops.quote_name(BudgetHold._meta.db_table)


def _upsert_tail() -> str:
    hold = _table()
    return ("ON CONFLICT (holder, case_id) DO UPDATE SET "
            f"reserved_musd = {hold}.reserved_musd + EXCLUDED.reserved_musd, "
            f"reserved_tokens = {hold}.reserved_tokens + EXCLUDED.reserved_tokens, renewed_at = EXCLUDED.renewed_at")


def holds_add_sql(source: str) -> str:
    """PostgreSQL: add `source`'s rows (case_id, musd, tokens: what a reservation took) to this
    process's holds; parameters: holds_add_params()."""
    return (f"INSERT INTO {_table()} (holder, host, pid, case_id, reserved_musd, reserved_tokens, renewed_at) "
            f"SELECT %s, %s, %s, {source}.case_id, {source}.musd, {source}.tokens, %s FROM {source} "
            + _upsert_tail())


def holds_add_params() -> list:
    name, host, pid = holder()
    return [name, host, pid, timezone.now()]


def holds_take_sql(source: str) -> str:
    """PostgreSQL: take from this process's holds what it still holds of `source`'s rows (v.c0
    the case, v.c1 µ$ and v.c2 tokens to give back), returning (case_id, musd, tokens) taken.
    Only this process's writer changes its holds, and the sweep deletes them: a hold the sweep
    deleted meanwhile is skipped by the UPDATE (so nothing is given back twice), and one it is
    deleting is waited for. Parameters: holds_take_params()."""
    hold = _table()
    return (f"UPDATE {hold} SET reserved_musd = {hold}.reserved_musd - x.musd, "
            f"reserved_tokens = {hold}.reserved_tokens - x.tokens, renewed_at = %s "
            f"FROM (SELECT held.id, LEAST(v.c1, held.reserved_musd) AS musd, "
            f"LEAST(v.c2, held.reserved_tokens) AS tokens FROM {hold} AS held JOIN {source} AS v "
            f"ON held.case_id = v.c0 WHERE held.holder = %s) AS x "
            f"WHERE {hold}.id = x.id RETURNING {hold}.case_id AS case_id, x.musd AS musd, x.tokens AS tokens")


def holds_take_params() -> list:
    return [timezone.now(), holder()[0]]


def _now_param():
    return connection.ops.adapt_datetimefield_value(timezone.now())


def holds_add(cursor, rows: list[tuple[int, int, int]]) -> None:
    """The same as holds_add_sql on Django's connection (SQLite's writer; its transaction)."""
    name, host, pid = holder()
    now = _now_param()
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s)"] * len(rows))
    cursor.execute(f"INSERT INTO {_table()} (holder, host, pid, case_id, reserved_musd, reserved_tokens, renewed_at) "
                   f"VALUES {values} " + _upsert_tail(),
                   [value for case_id, musd, tokens in rows for value in (name, host, pid, case_id, musd, tokens, now)])


def holds_take(cursor, rows: list[tuple]) -> list[tuple]:
    """The same as holds_take_sql on Django's connection, in the settlement's transaction:
    `rows` are the settlement's (case id, µ$ and tokens to give back, spent µ$ and tokens,
    calls); returned with what to give back cut to what this process held."""
    if not rows:
        return rows
    name = holder()[0]
    places = ", ".join(["%s"] * len(rows))
    lock = " FOR UPDATE" if connection.vendor == "postgresql" else ""  # SQLite: the write lock is held
    cursor.execute(f"SELECT case_id, reserved_musd, reserved_tokens FROM {_table()} "
                   f"WHERE holder = %s AND case_id IN ({places}){lock}", [name, *[row[0] for row in rows]])
    held = {case_id: (musd, tokens) for case_id, musd, tokens in cursor.fetchall()}
    out, taken, now = [], [], _now_param()
    for case_id, musd, tokens, *rest in rows:
        held_musd, held_tokens = held.get(case_id, (0, 0))
        give_musd, give_tokens = min(musd, held_musd), min(tokens, held_tokens)
        out.append((case_id, give_musd, give_tokens, *rest))
        if case_id in held:
            taken.append((give_musd, give_tokens, now, name, case_id))
    if taken:
        cursor.executemany(f"UPDATE {_table()} SET reserved_musd = reserved_musd - %s, "
                           "reserved_tokens = reserved_tokens - %s, renewed_at = %s "
                           "WHERE holder = %s AND case_id = %s", taken)
    return out


def _renew_sql() -> tuple[str, str]:
    hold = _table()
    return (f"DELETE FROM {hold} WHERE holder = %s AND reserved_musd = 0 AND reserved_tokens = 0",
            f"UPDATE {hold} SET renewed_at = %s WHERE holder = %s RETURNING case_id")


def holds_renew() -> set[int]:
    """Renew this process's holds, dropping those at zero; returns the cases it still holds
    (empty: nothing to renew until its next reservation). Django's connection (SQLite's writer)."""
    drop, renew = _renew_sql()
    name = holder()[0]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(drop, [name])
        cursor.execute(renew, [_now_param(), name])
        return {case_id for (case_id,) in cursor.fetchall()}


async def aholds_renew(conn) -> set[int]:
    """holds_renew on the loop's writer's connection (PostgreSQL, autocommit: two statements;
    a reservation cannot come between them, the writer making one statement at a time)."""
    drop, renew = _renew_sql()
    name = holder()[0]
    await conn.execute(drop, [name])
    cursor = await conn.execute(renew, [timezone.now(), name])
    return {case_id for (case_id,) in await cursor.fetchall()}


# --- The sweep ------------------------------------------------------------------------------


def _pid_gone(pid: int) -> bool:
    """True when no process of that pid runs on this host (or it is a zombie, dead but not yet
    reaped by its parent)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # another user's process: alive
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def holds_release_gone(*, now: datetime | None = None) -> int:
    """Give back to their cases the holds of processes that are gone: on this host a pid that no
    longer runs, anywhere a hold not renewed for CASE_BUDGET_HOLD_STALE_SECONDS. `now` is the
    clock's unless a test gives one. Returns how many holds were given back (empty ones are
    deleted without a word)."""
    now = now or timezone.now()
    stale_before = now - timedelta(seconds=settings.CASE_BUDGET_HOLD_STALE_SECONDS)
    me, host, _ = holder()
    others = BudgetHold.objects.exclude(holder=me)
    stale = list(others.filter(renewed_at__lt=stale_before).order_by("renewed_at", "pk")
                 .values_list("pk", flat=True)[:SCAN_LIMIT])
    dead_here = [pk for pk, pid in others.filter(host=host).exclude(pk__in=stale).order_by("pk")
                 .values_list("pk", "pid")[:SCAN_LIMIT] if _pid_gone(pid)]
    return (sum(_release(pk, "not renewed", stale_before) for pk in stale)
            + sum(_release(pk, "process gone", None) for pk in dead_here))


def _release(pk: int, why: str, stale_before: datetime | None) -> int:
    from audit.services import audit_record
    from casework.budgets.limits import usd_text
    from casework.budgets.services import budget_room_made

    with transaction.atomic():
        # Only the hold's row is locked (not its case's, which select_related joins): a case row
        # locked by someone else must not make the sweep skip the hold.
        rows = BudgetHold.objects.select_for_update(skip_locked=True, of=("self",)).filter(pk=pk)
        if stale_before is not None:
            rows = rows.filter(renewed_at__lt=stale_before)  # renewed meanwhile: alive after all
        hold = rows.select_related("case").first()
        if hold is None:
            return 0
        hold.delete()
        if not hold.reserved_musd and not hold.reserved_tokens:
            return 0
        CaseBudget.objects.filter(case_id=hold.case_id).update(
            reserved_musd=F("reserved_musd") - hold.reserved_musd,
            reserved_tokens=F("reserved_tokens") - hold.reserved_tokens)
        resumed = budget_room_made(case_id=hold.case_id)
        audit_record(actor="system", action="budget.hold_released", case=hold.case,
                     data={"host": hold.host, "pid": hold.pid, "why": why,
                           "renewed_at": hold.renewed_at.isoformat(),
                           "reserved_usd": usd_text(hold.reserved_musd), "reserved_tokens": hold.reserved_tokens,
                           "runs_resumed": resumed})
    logger.warning("Gave back case %s's budget hold of %s:%s (%s): %s µ$, %s tokens.", hold.case_id, hold.host,
                   hold.pid, why, hold.reserved_musd, hold.reserved_tokens)
    return 1
