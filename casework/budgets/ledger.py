"""The reservation: the Charger the runtime calls around every model call made for a case
(agents/runtime/charging.py), registered from BudgetsConfig.ready.

reserve: the conditional UPDATE
    UPDATE budgets_casebudget SET reserved = reserved + x
    WHERE case = (the case named) AND spent + reserved + x <= limit      (money and tokens)
The database checks the limit in the statement that takes the reservation. On PostgreSQL a
second UPDATE of the row waits for the first to commit and evaluates its WHERE again against
the row the first left (READ COMMITTED), so two calls can never both pass on the same headroom;
on SQLite every write holds the database's one write lock, which serialises them the same way.
So the calls that pass have reservations that together fit the limit; a call can only exceed
its own estimate (the prompt is estimated, about 8% over on prose), never by another call's.

The runtime's writer hands the requests over in batches (agents.runtime.charging): one UPDATE
takes a row per case (the sum of that case's requests in the batch) from a derived table;
a case whose sum does not fit is tried again request by request, so a batch never refuses a
call that would have passed alone. settle: the reservations are exchanged for the real usage,
one UPDATE per batch; a failed call's is given back (release).

The slow paths (the case's first call, which creates its ledger row; a refusal; the 80%
warning) read and write more, and only then.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from agents.llm.errors import BudgetReached
from agents.llm.prices import price_for
from agents.runtime.charging import ReserveRequest, Settlement
from casework.budgets.holds import (
    aholds_renew,
    holds_add,
    holds_add_params,
    holds_add_sql,
    holds_renew,
    holds_take,
    holds_take_params,
    holds_take_sql,
)
from casework.budgets.limits import type_limits, usd_text
from casework.budgets.models import CaseBudget
from casework.cases.models import Case

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reservation:
    case_id: int
    musd: int
    tokens: int


def estimate_musd(provider: str, model: str, input_tokens: int, output_tokens: int) -> int:
    """The call's price in whole micro-dollars, rounded up (0 for a model with no price).
    Exact: integer arithmetic on the prices' ratios, found once per table, provider and model
    (every call asks twice, at its reservation and at its settlement)."""
    per_input, per_output, denominator = price_ratios(provider, model)
    return -((-(input_tokens * per_input + output_tokens * per_output)) // denominator)


def price_ratios(provider: str, model: str) -> tuple[int, int, int]:
    """The model's prices as integers over one denominator, in µ$ per token: (input, output,
    denominator); (0, 0, 1) for a model with no price. Cached per price table."""
    if settings.LLM_PRICES is not _ratio_table[0]:
        _ratio_table[:] = [settings.LLM_PRICES]
        _ratio_cache.clear()
    try:
        return _ratio_cache[provider, model]
    except KeyError:
        if len(_ratio_cache) > 1000:  # model names come from settings and callers: keep it bounded
            _ratio_cache.clear()
        ratios = _ratio_cache[provider, model] = _ratios(provider, model)
        return ratios


_ratio_table: list = [None]  # the LLM_PRICES object the cache below was made from (tests override it)
_ratio_cache: dict[tuple[str, str], tuple[int, int, int]] = {}


def _ratios(provider: str, model: str) -> tuple[int, int, int]:
    """The model's prices (US$ per million tokens = µ$ per token) as integers over one common
    denominator: (input, output, denominator); (0, 0, 1) for a model with no price."""
    price = price_for(provider, model)
    if price is None:
        return 0, 0, 1
    in_num, in_den = price.input_per_million.as_integer_ratio()
    out_num, out_den = price.output_per_million.as_integer_ratio()
    return in_num * out_den, out_num * in_den, in_den * out_den


def _tables() -> tuple[str, str]:
    qn = connection.ops.quote_name
    return qn(CaseBudget._meta.db_table), qn(Case._meta.db_table)


def _values(rows: list[tuple], kinds: tuple[str, ...]) -> tuple[str, list]:
    """`SELECT CAST(%s AS ..) AS c0, ... UNION ALL SELECT ...`: rows as a derived table that
    PostgreSQL and SQLite both read (SQLite's VALUES cannot name its columns)."""
    first = ", ".join(f"CAST(%s AS {kind}) AS c{i}" for i, kind in enumerate(kinds))
    rest = ", ".join(f"CAST(%s AS {kind})" for kind in kinds)
    sql = " UNION ALL ".join([f"SELECT {first}"] + [f"SELECT {rest}"] * (len(rows) - 1))
    return sql, [value for row in rows for value in row]


def _reserve_update(source: str, need: bool, returning: str) -> str:
    """Reserve v.c1 µ$ and v.c2 tokens where they fit; with `need`, only where v.c3 µ$ and v.c4
    tokens would (a lease: what it takes, and the headroom it must leave beside it). `source`
    is the rows' derived table (named v)."""
    budget, case = _tables()
    need_musd, need_tokens = ("v.c3", "v.c4") if need else ("v.c1", "v.c2")
    return (
        f"UPDATE {budget} SET reserved_musd = {budget}.reserved_musd + v.c1, "
        f"reserved_tokens = {budget}.reserved_tokens + v.c2 "
        f"FROM {source} AS v, {case} AS c "
        f"WHERE c.reference = v.c0 AND {budget}.case_id = c.id "
        f"AND ({budget}.limit_musd IS NULL OR {budget}.spent_musd + {budget}.reserved_musd + {need_musd} "
        f"<= {budget}.limit_musd) "
        f"AND ({budget}.limit_tokens IS NULL OR {budget}.spent_tokens + {budget}.reserved_tokens + {need_tokens} "
        f"<= {budget}.limit_tokens) "
        f"RETURNING {returning}")


def _reserve_sql(count: int) -> str:
    budget, case = _tables()
    values, _ = _values([(None,) * 3] * count, ("TEXT", "BIGINT", "BIGINT"))
    # SQLite's RETURNING may not name the FROM clause's tables; a subquery it allows.
    return _reserve_update(f"({values})", False,
                           f"(SELECT reference FROM {case} WHERE id = {budget}.case_id), {budget}.case_id")


def _settle_update(source: str, given_back: tuple[str, str]) -> str:
    """Exchange reservations for spend: per case v.c0, give back `given_back` (µ$, tokens: what
    this process held of v.c1 and v.c2, holds.py), add v.c3 µ$ and v.c4 tokens spent, v.c5 calls."""
    budget, _ = _tables()
    musd, tokens = given_back
    return (
        f"UPDATE {budget} SET reserved_musd = {budget}.reserved_musd - {musd}, "
        f"reserved_tokens = {budget}.reserved_tokens - {tokens}, spent_musd = {budget}.spent_musd + v.c3, "
        f"spent_tokens = {budget}.spent_tokens + v.c4, calls = {budget}.calls + v.c5 "
        f"FROM {source} WHERE {budget}.case_id = v.c0 "
        f"RETURNING {budget}.case_id, {budget}.spent_musd, {budget}.spent_tokens, {budget}.limit_musd, "
        f"{budget}.limit_tokens, {budget}.warned_at")


def _settle_sql(count: int) -> str:
    values, _ = _values([(None,) * 6] * count, ("BIGINT",) * 6)
    return _settle_update(f"({values}) AS v", ("v.c1", "v.c2"))


def _reserve_rows(rows: list[tuple[str, int, int]]) -> dict[str, int]:
    """One conditional UPDATE reserving each (reference, µ$, tokens) row, one row per case, and
    this process's holds of what it took (holds.py), in one transaction; returns {reference:
    case id} of the rows it took (a case whose row would pass its limit, or that has no ledger
    yet, is left out)."""
    _, params = _values(rows, ("TEXT", "BIGINT", "BIGINT"))
    amounts = {reference: (musd, tokens) for reference, musd, tokens in rows}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_reserve_sql(len(rows)), params)
        taken = {reference: case_id for reference, case_id in cursor.fetchall()}
        if taken:
            holds_add(cursor, [(case_id, *amounts[reference]) for reference, case_id in taken.items()])
    return taken


class BudgetCharger:
    """agents.runtime.charging.Charger for case budgets."""

    @staticmethod
    def connection_prepare() -> None:
        """The writer's connection commits without waiting for the WAL's flush to disk
        (PostgreSQL's synchronous_commit=off, this session only): a ledger write is bookkeeping
        that would otherwise wait for a flush (4 ms here under load) per batch. What it gives up:
        if the database server crashes, the ledger's last moments (up to about three
        wal_writer_delay, 0.6 s by default) are lost, so calls settled then are not counted;
        nothing is ever half-applied, and the condition that stops parallel calls is unchanged
        (it is the UPDATE's, not the flush's). The slow paths' writes (audit entries,
        notifications) ask for the flush again (casework.budgets.commit.durable)."""
        connection.ensure_connection()
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET synchronous_commit = off")

    def reserve_many(self, requests: list[ReserveRequest], before_fallback=lambda: None) -> list:
        """The reservations of a batch: each case's requests summed into one row of one
        conditional UPDATE; a case whose sum did not fit (or that has no ledger yet) is tried
        again one request at a time, in the order they came: those which fit are taken, the
        rest refused. Before that, `before_fallback` writes the queued settlements."""
        estimates, rows = _plan(requests)
        taken = _reserve_rows(rows)
        if len(taken) < len(rows):
            before_fallback()  # what finished calls did not use is freed before any call is refused
        return [Reservation(case_id=taken[r.case], musd=musd, tokens=tokens) if r.case in taken
                else self._reserve_one(r.case, musd, tokens)
                for r, (musd, tokens) in zip(requests, estimates, strict=True)]

    def _reserve_one(self, reference: str, musd: int, tokens: int):
        for _ in range(2):
            taken = _reserve_rows([(reference, musd, tokens)])
            if taken:
                return Reservation(case_id=taken[reference], musd=musd, tokens=tokens)
            budget = _ledger(reference)
            if budget is None:
                return None  # no such case (deleted meanwhile): nothing to charge
            if not budget.get("created"):
                break  # the row was there: the limit refused it
        return _refuse(reference, musd, tokens)

    def settle_many(self, settlements: list[Settlement]) -> None:
        """Each reservation exchanged for its call's real usage (or given back, for a failed
        call), summed per case into one UPDATE; then the 80% warning of each case that passed it."""
        rows = _settle_rows(settlements)
        with transaction.atomic(), connection.cursor() as cursor:
            # What this process still holds of each reservation is given back (all of it, unless
            # the sweep gave its hold back meanwhile: holds.py); what was spent is added anyway.
            rows = holds_take(cursor, rows)
            _, params = _values(rows, ("BIGINT",) * 6)
            cursor.execute(_settle_sql(len(rows)), params)
            written = cursor.fetchall()
        for case_id in _to_warn(written):
            from casework.budgets.services import budget_warn

            budget_warn(case_id=case_id)

    # --- The same on the event loop, through psycopg's async connection (PostgreSQL) ----------

    @staticmethod
    def writes_on_loop() -> bool:
        return connection.vendor == "postgresql"

    @staticmethod
    async def aconnect():
        """An autocommit connection to Django's database, committing without the flush (see
        connection_prepare)."""
        import psycopg

        params = {key: value for key, value in connection.get_connection_params().items()
                  if key not in ("cursor_factory", "context", "prepare_threshold")}
        conn = await psycopg.AsyncConnection.connect(**params, autocommit=True, prepare_threshold=None)
        await conn.execute("SET synchronous_commit = off")
        return conn

    async def areserve_many(self, conn, requests: list[ReserveRequest], before_fallback) -> list:
        from agents.runtime.aio import in_thread

        estimates, rows = _plan(requests)
        taken = await _areserve_rows(conn, rows)
        if len(taken) < len(rows):
            await before_fallback(conn)
        results = []
        for request, (musd, tokens) in zip(requests, estimates, strict=True):
            if request.case in taken:
                results.append(Reservation(case_id=taken[request.case], musd=musd, tokens=tokens))
                continue
            result = None
            for _ in range(2):
                alone = await _areserve_rows(conn, [(request.case, musd, tokens)])
                if alone:
                    result = Reservation(case_id=alone[request.case], musd=musd, tokens=tokens)
                    break
                budget = await in_thread(_ledger, request.case)
                if budget is None or not budget.get("created"):
                    result = None if budget is None else await in_thread(_refuse, request.case, musd, tokens)
                    break
            results.append(result)
        return results

    # The writer renews this process's holds (casework/budgets/holds.py) while it holds anything.
    holds_renew = staticmethod(holds_renew)
    aholds_renew = staticmethod(aholds_renew)

    # What a call takes from its case's lease and settles there (the lease keeps the ratios).
    price = staticmethod(estimate_musd)
    ratios = staticmethod(price_ratios)

    async def areserve_leasing(self, conn, requests: list[ReserveRequest], before_fallback, lease_calls: int,
                               refills: list[tuple[str, int, int]] = ()) -> tuple[list, dict[str, Reservation]]:
        """As areserve_many, each case's requests taking with them a lease of `lease_calls` times
        their largest estimate (agents.runtime.charging hands it out in memory to the case's next
        calls), in one conditional UPDATE for the batch. A case gets its lease only where the
        budget leaves as much again beside it: near its limit a case's calls are reserved one
        batch at a time, as without leases, so a lease never makes a call pass the limit and
        seldom makes another process's call wait. `refills` (reference, µ$, tokens), for cases
        with no request here, are leases refilled ahead in the same statement, on the same
        condition. Returns the results and {reference: lease (or refill) taken}."""
        estimates, rows = _plan(requests)
        largest: dict[str, list[int]] = {}
        for request, (musd, tokens) in zip(requests, estimates, strict=True):
            most = largest.setdefault(request.case, [0, 0])
            most[0], most[1] = max(most[0], musd), max(most[1], tokens)
        chunks = {ref: (lease_calls * largest[ref][0], lease_calls * largest[ref][1]) for ref, _, _ in rows}
        chunks.update((ref, (musd, tokens)) for ref, musd, tokens in refills)
        wanted = [(ref, musd + chunks[ref][0], tokens + chunks[ref][1], musd + 2 * chunks[ref][0],
                   tokens + 2 * chunks[ref][1]) for ref, musd, tokens in rows]
        wanted += [(ref, musd, tokens, 2 * musd, 2 * tokens) for ref, musd, tokens in refills]
        leased = await _areserve_rows(conn, wanted, need=True) if wanted else {}
        rest = [request for request in requests if request.case not in leased]
        others = iter(await self.areserve_many(conn, rest, before_fallback) if rest else [])
        results = [Reservation(case_id=leased[r.case], musd=musd, tokens=tokens) if r.case in leased
                   else next(others) for r, (musd, tokens) in zip(requests, estimates, strict=True)]
        leases = {ref: Reservation(case_id=case_id, musd=chunks[ref][0], tokens=chunks[ref][1])
                  for ref, case_id in leased.items()}
        return results, leases

    async def asettle_many(self, conn, settlements: list[Settlement]) -> None:
        from agents.runtime.aio import in_thread

        rows = _settle_rows(settlements)
        cursor = await conn.execute(_asettle_sql(), [*_rows_json(rows), *holds_take_params()])
        written = await cursor.fetchall()
        for case_id in _to_warn(written):
            from casework.budgets.services import budget_warn

            await in_thread(lambda case_id=case_id: budget_warn(case_id=case_id))


def _plan(requests: list[ReserveRequest]) -> tuple[list[tuple[int, int]], list[tuple[str, int, int]]]:
    """Each request's estimate (µ$, tokens), and one row per case summing its requests."""
    estimates = [(estimate_musd(r.provider, r.model, r.input_tokens, r.max_output_tokens),
                  r.input_tokens + r.max_output_tokens) for r in requests]
    sums: dict[str, list[int]] = {}
    for request, (musd, tokens) in zip(requests, estimates, strict=True):
        total = sums.setdefault(request.case, [0, 0])
        total[0] += musd
        total[1] += tokens
    return estimates, [(ref, musd, tokens) for ref, (musd, tokens) in sums.items()]


def _json_rows(kinds: tuple[str, ...]) -> str:
    """PostgreSQL: the rows as one JSON array of arrays (one parameter): the same statement text
    whatever the batch's size (parsed once; a UNION ALL per row cost about 3 ms a batch to
    split), and one string to send (psycopg dumped an array per column in Python, about 150 µs
    an array of 50 rows, on the event loop)."""
    columns = ", ".join(f"(r->>{i})::{kind} AS c{i}" for i, kind in enumerate(kinds))
    return f"SELECT {columns} FROM json_array_elements(%s::json) AS r"


def _rows_json(rows: list[tuple]) -> list[str]:
    return [json.dumps(rows)]


@functools.cache
def _areserve_sql(need: bool) -> str:
    """The reservation's statement for the loop's writer (PostgreSQL), its rows as JSON: made
    once per process (the same text whatever the batch). With it, in the same statement, this
    process's holds of what it took (holds.py; parameters after the rows: holds.holds_add_params)."""
    budget, _ = _tables()
    width = 5 if need else 3
    rows = _json_rows(("text",) + ("bigint",) * (width - 1))
    taken = _reserve_update("v", need, f"c.reference AS reference, {budget}.case_id AS case_id, v.c1 AS musd, "
                                       "v.c2 AS tokens")
    return (f"WITH v AS ({rows}), t AS ({taken}), h AS ({holds_add_sql('t')}) "
            "SELECT reference, case_id FROM t")


@functools.cache
def _asettle_sql() -> str:
    """The settlement's statement for the loop's writer: what this process holds of each case's
    reservations given back, in the same statement as its hold (holds.py); parameters: the rows,
    then holds.holds_take_params."""
    rows = _json_rows(("bigint",) * 6)
    return (f"WITH v AS ({rows}), h AS ({holds_take_sql('v')}) "
            + _settle_update("v LEFT JOIN h ON h.case_id = v.c0", ("COALESCE(h.musd, 0)", "COALESCE(h.tokens, 0)")))


async def _areserve_rows(conn, rows: list[tuple], need: bool = False) -> dict[str, int]:
    cursor = await conn.execute(_areserve_sql(need), [*_rows_json(rows), *holds_add_params()])
    return {reference: case_id for reference, case_id in await cursor.fetchall()}


def _settle_rows(settlements: list[Settlement]) -> list[tuple]:
    """Per case: (case id, µ$ and tokens reserved to give back, µ$ and tokens spent, calls)."""
    sums: dict[int, list[int]] = {}
    for s in settlements:
        reservation = s.reservation
        total = sums.setdefault(reservation.case_id, [0, 0, 0, 0, 0])
        total[0] += reservation.musd
        total[1] += reservation.tokens
        if s.spent_musd is not None:  # calls settled together (a lease's), priced already
            total[2] += s.spent_musd
            total[3] += s.spent_tokens
            total[4] += s.calls
        elif not s.released:
            total[2] += estimate_musd(s.provider, s.model, s.input_tokens, s.output_tokens)
            total[3] += s.input_tokens + s.output_tokens
            total[4] += 1
    return [(case_id, *values) for case_id, values in sums.items()]


def _to_warn(written) -> list[int]:
    return [case_id for case_id, spent_musd, spent_tokens, limit_musd, limit_tokens, warned_at in written
            if warned_at is None and _past_warning(spent_musd, spent_tokens, limit_musd, limit_tokens)]


def _past_warning(spent_musd: int, spent_tokens: int, limit_musd: int | None, limit_tokens: int | None) -> bool:
    from django.conf import settings

    ratio = settings.CASE_BUDGET_WARN_RATIO
    return ((limit_musd is not None and spent_musd >= ratio * limit_musd)
            or (limit_tokens is not None and spent_tokens >= ratio * limit_tokens))


def _ledger(reference: str) -> dict | None:
    """The case's ledger row as {"created": bool}, made from its type's budget if it has none;
    None when there is no such case."""
    found = Case.objects.filter(reference=reference).values_list("pk", "case_type").first()
    if found is None:
        return None
    case_id, case_type = found
    if CaseBudget.objects.filter(case_id=case_id).exists():
        return {"created": False}
    limits = type_limits(case_type)
    try:
        with transaction.atomic():
            CaseBudget.objects.create(case_id=case_id, case_type=case_type, limit_musd=limits.musd,
                                      limit_tokens=limits.tokens)
    except IntegrityError:
        return {"created": False}  # another call made it first
    return {"created": True}


def _refuse(reference: str, musd: int, tokens: int) -> BudgetReached:
    """Record the refusal (the first since the last raise marks the case as at its budget and is
    audited) and say why, as the chat and the run panel show it."""
    from casework.budgets.services import budget_reached_record

    budget = CaseBudget.objects.select_related("case").get(case__reference=reference)
    money_short = budget.limit_musd is not None and budget.spent_musd + budget.reserved_musd + musd > budget.limit_musd
    if money_short or budget.limit_tokens is None:
        limit = usd_text(budget.limit_musd)
    else:
        limit = f"{budget.limit_tokens:,} tokens"
    message = f"This case has reached its budget of {limit}; a lead can raise it."
    budget_reached_record(budget=budget, estimate_musd=musd, estimate_tokens=tokens, message=message)
    return BudgetReached(message)
