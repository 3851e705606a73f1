"""Charging a case for its model calls: the hook the runtime calls around every provider
request (runner._Call.complete, the one place every call goes through).

Before a call is sent, its estimated cost (prompt tokens counted, plus the agent's max output
tokens, at the model's price) is reserved against the case named in the call's metadata
(`case`: the pipeline executor and "Ask the agent" both name it); after, the reservation is
settled with the real usage, or released when the call failed. A refused reservation raises
BudgetReached, and the call is never sent.

The runtime knows no budgets: the case layer registers a Charger (casework/budgets, from its
AppConfig.ready). With none registered, or CASE_BUDGETS_ENABLED off, nothing is charged.

How the writes are made. Django refuses database statements on the event loop's thread, and a
statement per call and per settlement costs more than an offline call does (bench/README.md,
budget_reservation). So the requests queue here and one writer per process writes them in
batches, like a group commit: each time it wakes it takes everything queued and writes the
reservations (one conditional UPDATE for all of them, the charger falling back to one per call
for a case whose batch did not fit), delivers them, then the settlements (one UPDATE). A call
waits for its reservation's batch; a settlement is not waited for (the ledger shows it a moment
later; until then the estimate stays reserved, which can only refuse early, never let a call
pass; and before any call is refused the queued settlements are written first). With one call
in flight a batch is that one call.

The writer is a task on the event loop when the charger can write asynchronously (PostgreSQL,
psycopg's async connection: `_LoopWriter`), else one thread with its own Django connection
(SQLite: `_Writer`). A thread was tried on PostgreSQL too and lost: while the loop's calls hold
the GIL, the thread waits for it (up to the 5 ms switch interval) at every step of every statement.

Leases (the loop's writer, CASE_BUDGET_LEASE_CALLS > 0): the batch's UPDATE also reserves, for
each case whose budget leaves room for twice as much again, a share of its headroom (that many
calls' estimates) which this process then hands out to the case's next calls in memory (_Lease).
When half of a lease is handed out, a refill is asked for ahead (twice the last, while the budget
leaves room for it twice) and written by the writer's next statement while the calls go on
taking what is left: after a case's first call, its calls wait for no statement at all. The
guarantee is the ledger's still: every call handed out is inside what the ledger holds reserved.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from django.conf import settings

from agents.llm.base import Completion, LLMRequest, Provider
from agents.llm.tokens import estimate_messages_tokens, estimate_text_tokens


@dataclass(frozen=True)
class ReserveRequest:
    case: str  # the case's reference
    provider: str
    model: str
    input_tokens: int
    max_output_tokens: int


@dataclass(frozen=True)
class Settlement:
    reservation: Any
    provider: str = ""
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    # A failed call: its reservation is given back, nothing spent.
    released: bool = False
    # Calls settled together in memory (a lease's, _Lease): what they spent, already priced.
    spent_musd: int | None = None
    spent_tokens: int = 0
    calls: int = 0


@dataclass(eq=False)
class _Lease:
    """A share of a case's headroom reserved in the ledger by this process (one conditional
    UPDATE, the charger's areserve_leasing) and handed out here to the case's calls in memory:
    a call that fits in it is reserved with no statement and no wait. Every call handed out is
    inside what the ledger holds reserved, so the guarantee is the ledger's: the calls that pass
    fit the limit together. What is left is given back when the case's calls here pause for
    CASE_BUDGET_LEASE_IDLE_SECONDS, when a call does not fit in it, and at flush."""

    reference: str
    case_id: int
    musd: int = 0
    tokens: int = 0
    in_flight: int = 0
    # Its size: `size_calls` times the largest estimate of a call handed out of it (call_musd,
    # call_tokens). When what is left falls below half of it, a refill is asked for ahead, so that
    # no call waits for it (the writer's next statement); each refill doubles `size_calls`, up to
    # CASE_BUDGET_LEASE_MAX_CALLS, and is taken only where the budget leaves as much again beside.
    size_calls: int = 0
    call_musd: int = 0
    call_tokens: int = 0
    refilling: bool = False  # a refill is queued or being written
    # The prices its calls were last reserved and settled at (the charger's ratios(): per input
    # token, per output token, over one denominator, in µ$), kept here so that a call is priced
    # with two multiplications and a division: (provider, model, ratios).
    reserve_prices: tuple = ("", "", (0, 0, 1))
    settle_prices: tuple = ("", "", (0, 0, 1))
    refill_refused: bool = False  # the budget had no room for one: this lease runs out instead
    lost: bool = False  # the sweep gave its hold back (this process was frozen): nothing of it is reserved
    used_at: float = 0.0  # time.monotonic() (the loop's clock) when its last call here ended
    # Its calls' settlements, summed here and written as one row (at the sweep, at its return):
    # until then the ledger holds their estimates reserved, which can only refuse early.
    settled_musd: int = 0  # reserved to give back
    settled_tokens: int = 0
    spent_musd: int = 0
    spent_tokens: int = 0
    calls: int = 0

    def settled(self) -> Settlement | None:
        """What its calls settled since the last time, as one settlement; None if nothing."""
        if not self.calls:
            return None
        settlement = Settlement(Leased(case_id=self.case_id, musd=self.settled_musd, tokens=self.settled_tokens),
                                spent_musd=self.spent_musd, spent_tokens=self.spent_tokens, calls=self.calls)
        self.settled_musd = self.settled_tokens = self.spent_musd = self.spent_tokens = self.calls = 0
        return settlement


class Leased(NamedTuple):
    """A reservation taken from a lease (or a lease's remainder given back): settled as any
    other, by case id and amounts. A tuple: one is made per call, and a frozen dataclass costs
    several times as much to make."""

    case_id: int
    musd: int
    tokens: int
    lease: _Lease | None = None


class Charger(Protocol):
    def reserve_many(self, requests: list[ReserveRequest], before_fallback: Callable[[], None]) -> list[Any]:
        """For each request, in order: a reservation, None (nothing to charge), or the
        agents.llm.errors.BudgetReached that refuses it. `before_fallback` writes the queued
        settlements: called before a request is tried alone (its case's batch did not fit)."""

    def settle_many(self, settlements: list[Settlement]) -> None: ...

    def connection_prepare(self) -> None:
        """Called on the writer's thread when it opens a connection."""

    # The loop's writer (a charger whose writes_on_loop() is true) also calls aconnect,
    # areserve_many, asettle_many, and with leases areserve_leasing (whose `refills` are leases
    # refilled ahead), price(provider, model, input tokens, output tokens) -> µ$, and
    # ratios(provider, model) -> (µ$ per input token, per output token, over one denominator),
    # which a lease keeps for its calls (a price table changed while a lease is held applies to
    # the next lease: prices are settings).


_charger: Charger | None = None


def charger_register(charger: Charger | None) -> None:
    global _charger
    _charger = charger


def charging_on() -> bool:
    return _charger is not None and settings.CASE_BUDGETS_ENABLED


def _leasing() -> bool:
    return settings.CASE_BUDGET_LEASE_CALLS > 0 and hasattr(_charger, "areserve_leasing")


class _Renewal:
    """A writer's renewal of this process's budget holds (casework/budgets/holds.py): armed by its
    first reservation, then every quarter of CASE_BUDGET_HOLD_STALE_SECONDS while the process
    holds anything, each renewal written by the writer itself, in its own queue (`renew_due`)."""

    renewing = False  # a renewal is scheduled
    renew_due = False  # the writer's next drain renews

    def _renewal_arm(self) -> None:
        if not self.renewing:
            self.renewing = True
            _renewal_schedule(self._renew_tick)

    def _renewal_next(self, held: bool) -> None:
        """After a renewal: the next while anything is held, else none until the next reservation."""
        if held:
            _renewal_schedule(self._renew_tick)
        else:
            self.renewing = False

    def _renew_tick(self) -> None:
        if _writer is not self:  # shut down (pool_shutdown): nothing to renew from here
            self.renewing = False
            return
        self.renew_due = True
        self._wake()


@dataclass
class _Writer(_Renewal):
    """The queue and the one thread that writes it (started on demand, again after a fork)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    reserves: list = field(default_factory=list)  # (request, loop, future)
    settlements: list = field(default_factory=list)
    busy: bool = False
    idle: threading.Condition = None  # type: ignore[assignment]
    pool: concurrent.futures.ThreadPoolExecutor | None = None
    leases: dict = field(default_factory=dict)  # none: leases are the loop's writer's (_LoopWriter)

    def __post_init__(self) -> None:
        self.idle = threading.Condition(self.lock)

    def _wake(self) -> None:
        # Under the lock: one drain at a time; it loops until the queue is empty.
        if not self.busy:
            self.busy = True
            if self.pool is None:
                self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="budget")
            self.pool.submit(self._drain)

    def reserve(self, request: ReserveRequest) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self.lock:
            self.reserves.append((request, loop, future))
            self._wake()
        return future

    def settle(self, settlement: Settlement) -> None:
        with self.lock:
            self.settlements.append(settlement)
            self._wake()

    def _drain(self) -> None:
        """Write until the queue is empty. The waiting calls' reservations first, delivered at
        once; then the settlements, which nobody waits for. Only a case whose batch did not fit
        has the settlements written before its calls are tried one by one (a settlement frees
        what its call reserved beyond its use)."""
        while True:
            with self.lock:
                reserves, self.reserves = self.reserves, []
                settlements, self.settlements = self.settlements, []
                renew, self.renew_due = self.renew_due, False
                if not reserves and not settlements and not renew:
                    self.busy = False
                    self.idle.notify_all()
                    return
            settled = [not settlements]

            def settle_now(settlements=settlements, settled=settled) -> None:
                if not settled[0]:
                    _charger.settle_many(settlements)
                    settled[0] = True

            if reserves:
                try:
                    results = _on_connection(_charger.reserve_many, [r for r, _, _ in reserves], settle_now)
                except Exception as exc:  # noqa: BLE001 - each waiting call gets the failure
                    results = [exc] * len(reserves)
                for (_, loop, future), result in zip(reserves, results, strict=True):
                    loop.call_soon_threadsafe(_resolve, future, result)
                self._renewal_arm()
            try:
                _on_connection(settle_now)
            except Exception:  # noqa: BLE001 - logged; the reservations stay (they can only refuse early)
                import logging

                logging.getLogger(__name__).exception("Settling %d budget reservations failed", len(settlements))
            if renew:
                try:
                    held = bool(_on_connection(_charger.holds_renew))
                except Exception:  # noqa: BLE001 - logged; tried again at the next renewal
                    import logging

                    logging.getLogger(__name__).exception("Renewing this process's budget holds failed")
                    held = True
                self._renewal_next(held)

    def _renew_tick(self) -> None:
        with self.lock:  # _wake is called under the lock
            super()._renew_tick()

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until everything queued is written (tests; a worker's end)."""
        with self.lock:
            self.idle.wait_for(lambda: not self.busy, timeout=timeout)


def _renewal_schedule(tick: Callable[[], None]) -> None:
    """Call `tick` on the process's loop in a quarter of CASE_BUDGET_HOLD_STALE_SECONDS: it asks
    the writer to renew this process's holds (casework/budgets/holds.py), so that the sweep can
    tell a live process's from a gone one's. The writer schedules the next while it holds any."""
    from agents.runtime import aio

    loop = aio.get_loop()
    delay = settings.CASE_BUDGET_HOLD_STALE_SECONDS / 4
    loop.call_soon_threadsafe(loop.call_later, delay, tick)


def _resolve(future: asyncio.Future, result: Any) -> None:
    if future.done():
        return  # the call was cancelled meanwhile (its reservation is released by the caller)
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)


def _on_connection(fn, *args):
    """Run `fn` on the writer thread's connection (kept between batches: no health check per
    batch), retried once on a new connection if it broke meanwhile."""
    from django.db import InterfaceError, OperationalError, connection

    if connection.connection is None:
        _charger.connection_prepare()
    try:
        return fn(*args)
    except (InterfaceError, OperationalError):
        if connection.in_atomic_block:
            raise
        connection.close()
        _charger.connection_prepare()
        return fn(*args)


class _LoopWriter(_Renewal):
    """The same queue written from the event loop itself, for a charger that can write without
    blocking (PostgreSQL through psycopg's async connection: ledger.BudgetCharger.aconnect).
    No thread: a thread writing while the loop's calls hold the GIL waits for it at every step
    of every statement (the interpreter hands it over every 5 ms), which made the writer the
    bottleneck of offline calls (bench/README.md, budget_reservation). The slow paths (a refusal,
    a case's first call, the 80% warning) use the ORM, on the loop's thread pool."""

    def __init__(self) -> None:
        self.reserves: list = []  # (request, future)
        self.settlements: list = []
        self.task: asyncio.Task | None = None
        self.conn = None
        self.loop: asyncio.AbstractEventLoop | None = None
        # Per case reference: the share of its headroom this process reserved in the ledger and
        # hands out to its calls in memory (see _Lease).
        self.leases: dict[str, _Lease] = {}
        self.leases_by_case: dict[int, _Lease] = {}
        self.refills: list[_Lease] = []  # leases below half, to be refilled ahead (_refill_ask)
        self.sweeping = False

    def take(self, case: str, provider: str, model: str, input_tokens: int, most_tokens: int) -> Leased | None:
        """The call's reservation from its case's lease, with no statement and no wait; None
        when the case has no lease here or the lease is too small (then what is left of it is
        given back, before any of the case's calls could be refused: see _drain). Below half of
        its size, a refill is asked for ahead (_refill_ask)."""
        lease = self.leases.get(case)
        if lease is None:
            return None
        known_provider, known_model, ratios = lease.reserve_prices
        if provider != known_provider or model != known_model:
            ratios = _charger.ratios(provider, model)
            lease.reserve_prices = (provider, model, ratios)
        musd = -((-(input_tokens * ratios[0] + most_tokens * ratios[1])) // ratios[2])
        tokens = input_tokens + most_tokens
        if lease.musd >= musd and lease.tokens >= tokens:
            lease.musd -= musd
            lease.tokens -= tokens
            lease.in_flight += 1
            if musd > lease.call_musd:
                lease.call_musd = musd
            if tokens > lease.call_tokens:
                lease.call_tokens = tokens
            if (not lease.refilling and not lease.refill_refused
                    and (2 * lease.musd < lease.size_calls * lease.call_musd
                         or 2 * lease.tokens < lease.size_calls * lease.call_tokens)):
                self._refill_ask(lease)
            return Leased(lease.case_id, musd, tokens, lease)
        self._lease_return(case)
        return None

    def _refill_ask(self, lease: _Lease) -> None:
        """Queue a refill of the lease: written by the writer's next statement while the case's
        calls go on taking what is left, so none of them waits for it."""
        lease.refilling = True
        self.refills.append(lease)
        self._wake()

    def _lease_return(self, reference: str) -> None:
        lease = self.leases.pop(reference, None)
        if lease is None:
            return
        self.leases_by_case.pop(lease.case_id, None)
        settled = lease.settled()
        if settled is not None:
            self.settlements.append(settled)
        if lease.musd or lease.tokens:
            self.settlements.append(Settlement(Leased(case_id=lease.case_id, musd=lease.musd, tokens=lease.tokens),
                                               released=True))
        self._wake()

    def _leases_sweep(self) -> None:
        """Every CASE_BUDGET_LEASE_IDLE_SECONDS while any lease is held (one timer, not one per
        call): give back the leases none of whose calls ran here for that long."""
        loop = asyncio.get_running_loop()
        idle = settings.CASE_BUDGET_LEASE_IDLE_SECONDS
        for reference, lease in list(self.leases.items()):
            if not lease.in_flight and time.monotonic() - lease.used_at >= idle:
                self._lease_return(reference)
            elif (settled := lease.settled()) is not None:  # the ledger shows the spend a moment later
                self.settlements.append(settled)
                self._wake()
        self.sweeping = bool(self.leases)
        if self.sweeping:
            loop.call_later(idle, self._leases_sweep)

    def _wake(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._drain())

    def reserve(self, request: ReserveRequest) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self.reserves.append((request, future))
        self._wake()
        return future

    def settle(self, settlement: Settlement) -> None:
        reservation = settlement.reservation
        lease = getattr(reservation, "lease", None)
        if lease is not None and self.leases.get(lease.reference) is lease:
            if settlement.released:
                self._leased_release(lease, reservation)
            else:
                self.leased_settle(lease, reservation, settlement.provider, settlement.model,
                                   settlement.input_tokens, settlement.output_tokens)
            return
        if lease is not None:
            lease.in_flight -= 1
            if lease.lost:  # nothing of it is reserved any more: only the spend is written
                settlement = dataclasses.replace(settlement, reservation=Leased(reservation.case_id, 0, 0))
        if self.leases and not settlement.released:
            settlement = self._absorb_excess(settlement)
        self.settlements.append(settlement)
        self._wake()

    def leased_settle(self, lease: _Lease, reservation: Leased, provider: str, model: str, input_tokens: int,
                      output_tokens: int) -> None:
        """A call of a lease held here settles in memory, summed into the lease (no Settlement
        is made: this is every leased call's path)."""
        lease.in_flight -= 1
        known_provider, known_model, ratios = lease.settle_prices
        if provider != known_provider or model != known_model:
            ratios = _charger.ratios(provider, model)
            lease.settle_prices = (provider, model, ratios)
        used_musd = -((-(input_tokens * ratios[0] + output_tokens * ratios[1])) // ratios[2])
        used_tokens = input_tokens + output_tokens
        settled_musd, settled_tokens = reservation.musd, reservation.tokens
        if used_musd > settled_musd:  # used more than its estimate: the excess from the lease
            more = min(used_musd - settled_musd, lease.musd)
            lease.musd -= more
            settled_musd += more
        if used_tokens > settled_tokens:
            more = min(used_tokens - settled_tokens, lease.tokens)
            lease.tokens -= more
            settled_tokens += more
        lease.settled_musd += settled_musd
        lease.settled_tokens += settled_tokens
        lease.spent_musd += used_musd
        lease.spent_tokens += used_tokens
        lease.calls += 1
        if not lease.in_flight:
            lease.used_at = time.monotonic()

    def _leased_release(self, lease: _Lease, reservation: Leased) -> None:
        """A failed call's share goes back to the lease: the ledger never saw it apart."""
        lease.in_flight -= 1
        lease.musd += reservation.musd
        lease.tokens += reservation.tokens
        if not lease.in_flight:
            lease.used_at = time.monotonic()

    async def _connection(self):
        if self.conn is None or self.conn.closed or self.loop is not asyncio.get_running_loop():
            self.conn, self.loop = await _charger.aconnect(), asyncio.get_running_loop()
        return self.conn

    async def _with_connection(self, fn, *args):
        from psycopg import InterfaceError, OperationalError

        try:
            return await fn(await self._connection(), *args)
        except (InterfaceError, OperationalError):
            self.conn = None  # broken: once more on a new one
            return await fn(await self._connection(), *args)

    async def _drain(self) -> None:
        import logging

        while self.reserves or self.settlements or self.refills or self.renew_due:
            renew, self.renew_due = self.renew_due, False
            reserves, self.reserves = self.reserves, []
            refills, self.refills = self.refills, []
            settlements, self.settlements = self.settlements, []
            settled = [not settlements]

            async def settle_now(conn, settlements=settlements, settled=settled) -> None:
                if not settled[0]:
                    await _charger.asettle_many(conn, settlements)
                    settled[0] = True

            if reserves or refills:
                requests = [r for r, _ in reserves]
                # The refills go in the same statement as the waiting calls' reservations.
                refilling = self._refills_due(refills, {r.case for r in requests})
                try:
                    if _leasing():
                        results, leases = await self._with_connection(
                            _charger.areserve_leasing, requests, settle_now, settings.CASE_BUDGET_LEASE_CALLS,
                            [(reference, musd, tokens) for reference, (_, musd, tokens) in refilling.items()])
                        for reference, got in leases.items():
                            if reference in refilling:
                                self._refilled(refilling.pop(reference)[0], got)
                            else:
                                self._lease_add(reference, got)
                    else:
                        results = await self._with_connection(_charger.areserve_many, requests, settle_now)
                except Exception as exc:  # noqa: BLE001 - each waiting call gets the failure
                    if refilling:
                        logging.getLogger(__name__).exception("Refilling %d budget leases failed", len(refilling))
                    results = [exc] * len(reserves)
                for lease, _, _ in refilling.values():  # no room for it: the lease runs out instead
                    lease.refilling, lease.refill_refused = False, True
                for (_, future), result in zip(reserves, results, strict=True):
                    _resolve(future, result)
                self._renewal_arm()
            try:
                await self._with_connection(settle_now)
            except Exception:  # noqa: BLE001 - logged; the reservations stay (they can only refuse early)
                logging.getLogger(__name__).exception("Settling %d budget reservations failed", len(settlements))
            if renew:
                await self._holds_renew()

    async def _holds_renew(self) -> None:
        """Renew this process's holds; forget the leases whose hold the sweep gave back (this
        process was frozen past CASE_BUDGET_HOLD_STALE_SECONDS): the ledger no longer backs them.
        What their calls settled in memory is still written (its spend counts)."""
        import logging

        try:
            held = await self._with_connection(_charger.aholds_renew)
        except Exception:  # noqa: BLE001 - logged; tried again at the next renewal
            logging.getLogger(__name__).exception("Renewing this process's budget holds failed")
            self._renewal_next(True)
            return
        lost = [lease for lease in self.leases.values() if lease.case_id not in held]
        for lease in lost:
            if lease.musd or lease.tokens or lease.in_flight or lease.calls:  # (an empty one's hold was at 0)
                logging.getLogger(__name__).warning(
                    "The budget lease of case %s was given back by the sweep (this process did not renew its "
                    "holds in time): forgotten here.", lease.reference)
            lease.lost = True
            self.leases.pop(lease.reference, None)
            self.leases_by_case.pop(lease.case_id, None)
            if (settled := lease.settled()) is not None:
                self.settlements.append(settled)
        self._renewal_next(bool(held))  # every lease left is a held case's

    def _absorb_excess(self, settlement: Settlement) -> Settlement:
        """A call that used more than its estimate (the prompt's count is an estimate) takes the
        excess from its case's lease, in the ledger too (the settlement gives back that much more
        of the reserved): the lease never hands out headroom the case no longer has, so calls
        still pass the limit only by their own estimate's error, as without leases."""
        reservation = settlement.reservation
        lease = self.leases_by_case.get(reservation.case_id)
        if lease is None:
            return settlement
        used_musd = _charger.price(settlement.provider, settlement.model, settlement.input_tokens,
                                   settlement.output_tokens)
        used_tokens = settlement.input_tokens + settlement.output_tokens
        more_musd = min(max(used_musd - reservation.musd, 0), lease.musd)
        more_tokens = min(max(used_tokens - reservation.tokens, 0), lease.tokens)
        if not more_musd and not more_tokens:
            return settlement
        lease.musd -= more_musd
        lease.tokens -= more_tokens
        return dataclasses.replace(settlement, reservation=Leased(
            case_id=reservation.case_id, musd=reservation.musd + more_musd, tokens=reservation.tokens + more_tokens,
            lease=getattr(reservation, "lease", None)))

    def _refills_due(self, refills: list[_Lease], waiting: set[str]) -> dict[str, tuple[_Lease, int, int]]:
        """The refills to write: {reference: (lease, µ$, tokens)}, each twice its lease's last size
        in calls (up to CASE_BUDGET_LEASE_MAX_CALLS). A lease given back meanwhile is not refilled,
        nor one whose case has calls waiting in the same statement (their reservation adds a
        lease's worth to it)."""
        due = {}
        for lease in refills:
            if self.leases.get(lease.reference) is lease and lease.reference not in waiting:
                # Still `refilling` until the statement's answer (_refilled): one refill at a time.
                lease.size_calls = min(2 * lease.size_calls,
                                       max(settings.CASE_BUDGET_LEASE_MAX_CALLS, lease.size_calls))
                due[lease.reference] = (lease, lease.size_calls * lease.call_musd,
                                        lease.size_calls * lease.call_tokens)
            else:
                lease.refilling = False
        return due

    def _refilled(self, lease: _Lease, got: Any) -> None:
        """A refill the ledger took: the lease's, or given back if the lease went back while the
        refill was being written (idle, too small for a call, flushed)."""
        lease.refilling = False
        if self.leases.get(lease.reference) is lease:
            lease.musd += got.musd
            lease.tokens += got.tokens
        else:
            self.settlements.append(Settlement(Leased(lease.case_id, got.musd, got.tokens), released=True))

    def _lease_add(self, reference: str, got: Any) -> None:
        lease = self.leases.get(reference)
        if lease is None:
            loop = asyncio.get_running_loop()
            lease = self.leases[reference] = _Lease(reference=reference, case_id=got.case_id, used_at=time.monotonic(),
                                                    size_calls=settings.CASE_BUDGET_LEASE_CALLS)
            self.leases_by_case[got.case_id] = lease
            if not self.sweeping:  # given back once the case's calls here stop for a moment
                self.sweeping = True
                loop.call_later(settings.CASE_BUDGET_LEASE_IDLE_SECONDS, self._leases_sweep)
        lease.musd += got.musd
        lease.tokens += got.tokens
        size = max(lease.size_calls, 1)
        lease.call_musd = max(lease.call_musd, -(-got.musd // size))
        lease.call_tokens = max(lease.call_tokens, -(-got.tokens // size))

    def flush(self, timeout: float = 30.0, leases_keep: bool = False) -> None:
        """Give back every lease (unless `leases_keep`) and wait until everything queued is written."""
        from agents.runtime import aio

        async def idle() -> None:
            for reference in [] if leases_keep else list(self.leases):
                self._lease_return(reference)
            while self.task is not None and not self.task.done():
                await asyncio.wait([self.task], timeout=timeout)

        aio.run(idle())

    def close(self) -> None:
        from agents.runtime import aio

        async def close() -> None:
            if self.conn is not None and self.loop is asyncio.get_running_loop():
                await self.conn.close()
            self.conn = None

        aio.run(close())


_writer: _Writer | _LoopWriter | None = None


def _get_writer() -> _Writer | _LoopWriter:
    """The process's writer (on the loop when the charger can write asynchronously, else a
    thread); a new one in a forked child (_forgotten_in_child)."""
    global _writer
    if _writer is None:
        loop_capable = _charger is not None and getattr(_charger, "writes_on_loop", lambda: False)()
        _writer = _LoopWriter() if loop_capable else _Writer()
    return _writer


def _forgotten_in_child() -> None:
    """A forked child starts a writer of its own: the parent's thread and connection did not come
    along, its queue may have been caught mid-batch, and its leases are the parent's to hand out."""
    global _writer
    _writer = None


os.register_at_fork(after_in_child=_forgotten_in_child)


def flush(leases_keep: bool = False) -> None:
    """Wait until everything queued is written (tests; a benchmark's trials); the leases are
    given back first, unless `leases_keep` (tests counting what a lease's refills write)."""
    if isinstance(_writer, _LoopWriter):
        _writer.flush(leases_keep=leases_keep)
    elif _writer is not None:
        _writer.flush()


def pool_shutdown() -> None:
    """Write what is queued, then close the writer's connection (and thread): tests, before their
    database goes; a worker's end. The next charge starts a new writer, chosen afresh."""
    global _writer
    writer = _writer
    if writer is None:
        return
    writer.flush()
    _writer = None
    if isinstance(writer, _LoopWriter):
        writer.close()
        return
    with writer.lock:
        pool, writer.pool = writer.pool, None
    if pool is None:
        return

    def close() -> None:
        from django.db import connection

        connection.close()

    pool.submit(close).result()
    pool.shutdown(wait=True)


def request_estimate(request: LLMRequest) -> tuple[int, int]:
    """(prompt tokens, most output tokens) of a request: the reservation's size. The prompt is
    counted as agents.llm.tokens counts it (about 8% over on prose), the tools' schemas with it."""
    prompt = estimate_messages_tokens(request.messages)
    if request.tools:
        prompt += sum(estimate_text_tokens(t.name + t.description + json.dumps(t.parameters, sort_keys=True))
                      for t in request.tools)
    return prompt, request.max_tokens


async def areserve(case: str | None, provider: Provider, request: LLMRequest) -> Any | None:
    """Reserve the request's estimate against `case` (a case reference), or None (nothing charged)."""
    if not case or not charging_on():
        return None
    prompt, most = request_estimate(request)
    writer = _get_writer()
    model = provider.model or ""
    if writer.leases and (leased := writer.take(case, provider.name, model, prompt, most)) is not None:
        return leased
    future = writer.reserve(ReserveRequest(case=case, provider=provider.name, model=model, input_tokens=prompt,
                                           max_output_tokens=most))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        # Cancelled while queued or being written: whatever it got is given back once written.
        future.add_done_callback(lambda f: f.cancelled() or f.exception() or release_soon(f.result()))
        raise


async def asettle(reservation: Any | None, provider: Provider, completion: Completion) -> None:
    """Exchange the reservation for the real usage; queued, not waited for."""
    if reservation is None:
        return
    writer = _get_writer()
    model = completion.model or provider.model or ""
    lease = getattr(reservation, "lease", None)
    if lease is not None and writer.leases.get(lease.reference) is lease:  # in memory, no Settlement made
        writer.leased_settle(lease, reservation, provider.name, model, completion.input_tokens,
                             completion.output_tokens)
        return
    writer.settle(Settlement(reservation, provider=provider.name, model=model,
                             input_tokens=completion.input_tokens, output_tokens=completion.output_tokens))


def release_soon(reservation: Any | None) -> None:
    """Give the reservation back (the call failed or was cancelled); queued, not waited for."""
    if reservation is not None:
        _get_writer().settle(Settlement(reservation, released=True))
