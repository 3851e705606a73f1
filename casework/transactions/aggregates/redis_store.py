"""The velocity counters in Redis (TXN_AGGREGATES_REDIS_URL): the same buckets as the tables
(buckets.py), read and counted for one transaction in one round trip.

Layout, under a generation (an integer; `txnagg:gen` names the current one):

    txnagg:<gen>:t:<series>:<group>:<size>   hash: n<start> -> count, c<start> -> cents
    txnagg:<gen>:d:<series>:<group>:<size>   hash: <start>|<value> -> 1 (distinct counts)

One Lua script (OBSERVE) does a transaction's reads (every aggregate the active rules read:
the buckets of its window) and then its increments, atomically, so the values are "every
transaction counted before it, then itself", as DbStore gives. A batch sends one script per
transaction in one pipeline (one round trip; each sees the ones before it). Every hash
written gets an expiry of its bucket size's retention and a day, and is trimmed of buckets no
window reads any more when it grows past a few times what its retention holds: no prune pass.

No `txnagg:gen` (Redis restarted empty, or never built): the script reads nothing and counts
nothing, and the caller gets no values (a velocity condition does not hold) until
rebuild() has run (the beat's aggregates_ensure every 30 s). rebuild() builds a new
generation: it sets `txnagg:next` first (from then on every transaction is also counted
into it), waits TXN_AGGREGATES_REBUILD_GRACE_S so that the transactions counted only into the
old generation have committed, adds the transactions the database holds that were created
before it started (HINCRBY: the two add up), then makes it current and drops the old one.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from datetime import UTC, datetime

import redis
from django.conf import settings

from casework.transactions import rules
from casework.transactions.aggregates.buckets import RETENTION, cover, epoch, horizon, starts
from casework.transactions.aggregates.counters import DISTINCT_READ_CAP, MemoryStore, Series, cents_of

logger = logging.getLogger(__name__)

PREFIX = "txnagg:"
TTL_SLACK = 86400
# A totals hash is trimmed when it holds this many times the fields its retention needs.
TRIM_FACTOR = 4
DISTINCT_TRIM = 1024

OBSERVE = """
local p = ARGV[1]
local spec = cjson.decode(ARGV[2])
local cap = tonumber(ARGV[3])
local cur = redis.call('GET', p .. 'gen')
local nxt = redis.call('GET', p .. 'next')
local out = {cur and 1 or 0}
if cur then
  for _, r in ipairs(spec.r) do
    local kind, base, ranges = r[1], r[2], r[3]
    if kind == 't' then
      local n, c = 0, 0
      for _, rg in ipairs(ranges) do
        local size, first, last = rg[1], rg[2], rg[3]
        local fields = {}
        for s = first, last, size do
          fields[#fields + 1] = 'n' .. string.format('%d', s)
          fields[#fields + 1] = 'c' .. string.format('%d', s)
        end
        local vals = redis.call('HMGET', p .. cur .. ':t:' .. base .. ':' .. size, unpack(fields))
        for j = 1, #vals, 2 do
          if vals[j] then
            n = n + tonumber(vals[j])
            c = c + tonumber(vals[j + 1] or 0)
          end
        end
      end
      out[#out + 1] = n
      out[#out + 1] = c
    else
      local own = r[4]
      local seen, count, keys = {}, 0, {}
      for _, rg in ipairs(ranges) do
        local size, first, last = rg[1], rg[2], rg[3]
        if not keys[size] then
          keys[size] = redis.call('HKEYS', p .. cur .. ':d:' .. base .. ':' .. size)
        end
        for _, f in ipairs(keys[size]) do
          local bar = string.find(f, '|', 1, true)
          local s = tonumber(string.sub(f, 1, bar - 1))
          if s >= first and s <= last then
            local v = string.sub(f, bar + 1)
            if not seen[v] and count < cap then
              seen[v] = true
              count = count + 1
            end
          end
        end
      end
      out[#out + 1] = count
      out[#out + 1] = (own and seen[own]) and 1 or 0
    end
  end
end
local function trim(key, cutoff, limit, distinct)
  if redis.call('HLEN', key) <= limit then return end
  local dead = {}
  for _, f in ipairs(redis.call('HKEYS', key)) do
    local s
    if distinct then
      s = tonumber(string.sub(f, 1, string.find(f, '|', 1, true) - 1))
    else
      s = tonumber(string.sub(f, 2))
    end
    if s < cutoff then dead[#dead + 1] = f end
  end
  for i = 1, #dead, 500 do
    redis.call('HDEL', key, unpack(dead, i, math.min(i + 499, #dead)))
  end
end
local gens = {}
if cur then gens[#gens + 1] = cur end
if nxt and nxt ~= cur then gens[#gens + 1] = nxt end
for _, w in ipairs(spec.w) do
  local base, cents, value, buckets = w[1], w[2], w[3], w[4]
  for _, g in ipairs(gens) do
    for _, b in ipairs(buckets) do
      local size, start, keep = b[1], b[2], b[3]
      local s = string.format('%d', start)
      local key = p .. g .. ':t:' .. base .. ':' .. size
      redis.call('HINCRBY', key, 'n' .. s, 1)
      redis.call('HINCRBY', key, 'c' .. s, cents)
      redis.call('EXPIRE', key, keep + tonumber(ARGV[4]))
      trim(key, start - keep, 2 * tonumber(ARGV[5]) * keep / size + 16, false)
      if value then
        local dkey = p .. g .. ':d:' .. base .. ':' .. size
        redis.call('HSET', dkey, s .. '|' .. value, 1)
        redis.call('EXPIRE', dkey, keep + tonumber(ARGV[4]))
        trim(dkey, start - keep, tonumber(ARGV[6]), true)
      end
    end
  end
end
return out
"""

_CLIENTS: dict[str, tuple[redis.Redis, object]] = {}


def enabled() -> bool:
    return bool(settings.TXN_AGGREGATES_REDIS_URL)


def client() -> redis.Redis:
    return _connection()[0]


def _connection():
    url = settings.TXN_AGGREGATES_REDIS_URL
    found = _CLIENTS.get(url)
    if found is None:
        conn = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2, health_check_interval=30)
        found = _CLIENTS[url] = (conn, conn.register_script(OBSERVE))
    return found


class Answers(MemoryStore):
    """What the script read for one transaction, answering compute()'s two questions."""

    def __init__(self, found: dict) -> None:
        super().__init__()
        self.found = found

    def totals(self, series_key: str, group: str, ranges) -> tuple[int, int]:
        return self.found[("t", series_key, group, tuple(ranges))]

    def distinct_count(self, series_key: str, group: str, ranges, value) -> tuple[int, bool]:
        return self.found[("d", series_key, group, tuple(ranges))]


def _plan(row: dict, readable, series: Iterable[Series], *, count: bool) -> tuple[list, list, list]:
    """The script's reads (deduplicated) and writes for one row, and the answers' keys in order."""
    t = epoch(row["occurred_at"])
    reads, keys = [], []
    for _key, agg, s in readable:
        group = s.group(row)
        if group is None:
            continue
        ranges = tuple(cover(t, agg.seconds))
        kind = "d" if agg.fn == "count_distinct" else "t"
        found = (kind, s.key, group, ranges)
        if found in keys:
            continue
        keys.append(found)
        read = [kind, f"{s.key}:{group}", [list(r) for r in ranges]]
        if kind == "d":
            read.append(s.value(row) or False)
        reads.append(read)
    writes = []
    if count:
        for s in series:
            if s.counts(row):
                writes.append([f"{s.key}:{s.group(row)}", cents_of(row), s.value(row) or False,
                               [[size, start, RETENTION[size]] for size, start in starts(t)]])
    return reads, writes, keys


def _args(reads: list, writes: list) -> list:
    return [PREFIX, json.dumps({"r": reads, "w": writes}, separators=(",", ":")), DISTINCT_READ_CAP, TTL_SLACK,
            TRIM_FACTOR, DISTINCT_TRIM]


def _answers(reply: list, keys: list) -> Answers | None:
    if not reply or not reply[0]:
        return None  # not built (Redis lost them): no values until the rebuild
    found = {}
    for i, key in enumerate(keys):
        a, b = int(reply[1 + 2 * i]), int(reply[2 + 2 * i])
        found[key] = (a, bool(b)) if key[0] == "d" else (a, b)
    return Answers(found)


def exchange(rows: list[dict], readable, series: list[Series], *, count: bool = True) -> list[Answers | None]:
    """For rows in the order given: each one's reads, then (count) its increments, in one round
    trip. None for a row when the counters are not built."""
    conn, script = _connection()
    plans = [_plan(row, readable, series, count=count) for row in rows]
    try:
        if len(plans) == 1:
            reads, writes, keys = plans[0]
            return [_answers(script(args=_args(reads, writes)), keys)]
        pipe = conn.pipeline(transaction=False)
        for reads, writes, _keys in plans:
            script(args=_args(reads, writes), client=pipe)
        return [_answers(reply, plan[2]) for reply, plan in zip(pipe.execute(), plans, strict=True)]
    except redis.RedisError:
        # Redis down: the decision goes on without velocity values (a routine infrastructure
        # event costs detection until the rebuild, never an error); the rows are in the
        # database, and the rebuild counts them.
        logger.warning("velocity counters unavailable in Redis", exc_info=True)
        return [None] * len(plans)


def undo(rows: list[dict], series: list[Series]) -> None:
    """Take back the increments of rows whose database transaction failed (best effort)."""
    conn = client()
    gens = [g for g in conn.mget(PREFIX + "gen", PREFIX + "next") if g]
    pipe = conn.pipeline(transaction=False)
    for row in rows:
        t = epoch(row["occurred_at"])
        for s in series:
            if not s.counts(row):
                continue
            for gen in {g.decode() for g in gens}:
                for size, start in starts(t):
                    key = f"{PREFIX}{gen}:t:{s.key}:{s.group(row)}:{size}"
                    pipe.hincrby(key, f"n{start}", -1)
                    pipe.hincrby(key, f"c{start}", -cents_of(row))
    pipe.execute()


def ready() -> bool:
    return client().exists(PREFIX + "gen") == 1


def _delete(pattern: str) -> int:
    conn = client()
    deleted = 0
    batch = []
    for key in conn.scan_iter(match=pattern, count=1000):
        batch.append(key)
        if len(batch) >= 1000:
            deleted += conn.unlink(*batch)
            batch = []
    if batch:
        deleted += conn.unlink(*batch)
    return deleted


def series_drop(series_keys: Iterable[str]) -> None:
    for key in series_keys:
        _delete(f"{PREFIX}*:?:{key}:*")


def _write(gen: str, store: MemoryStore) -> None:
    """Add a MemoryStore's buckets to a generation (HINCRBY: they add to what is there)."""
    conn = client()
    pipe = conn.pipeline(transaction=False)
    pending = 0
    for key, group, size, start, n, cents in store.rows():
        name = f"{PREFIX}{gen}:t:{key}:{group}:{size}"
        pipe.hincrby(name, f"n{start}", n)
        pipe.hincrby(name, f"c{start}", cents)
        pipe.expire(name, RETENTION[size] + TTL_SLACK)
        pending += 3
        if pending >= 6000:
            pipe.execute()
            pending = 0
    for key, group, size, start, value in store.distinct_rows():
        name = f"{PREFIX}{gen}:d:{key}:{group}:{size}"
        pipe.hset(name, f"{start}|{value}", 1)
        pipe.expire(name, RETENTION[size] + TTL_SLACK)
        pending += 2
        if pending >= 6000:
            pipe.execute()
            pending = 0
    pipe.execute()


def _count_history(series: list[Series], gen: str, *, before: datetime) -> int:
    """Add every stored transaction created before `before`, within the buckets' retention
    before the newest, to the generation's counters of these series."""
    from django.db.models import Max

    from casework.transactions.models import Transaction

    newest = Transaction.objects.aggregate(newest=Max("occurred_at"))["newest"]
    if newest is None or not series:
        return 0
    first = horizon(epoch(newest))
    since = datetime.fromtimestamp(min(first.values()), tz=UTC)
    count = 0
    store = MemoryStore()
    for values in (Transaction.objects.filter(occurred_at__gte=since, created_at__lt=before)
                   .order_by("occurred_at", "pk").values_list(*rules.ROW_COLUMNS).iterator(chunk_size=5000)):
        row = rules.row_from_values(values)
        for s in series:
            store.add(s, row)
        count += 1
        if count % 200_000 == 0:  # bound the memory: write what is gathered
            _write(gen, _pruned(store, first))
            store = MemoryStore()
    _write(gen, _pruned(store, first))
    return count


def _pruned(store: MemoryStore, first: dict[int, int]) -> MemoryStore:
    """Only the buckets a window still reads (as prune() keeps in the tables)."""
    for (_key, _group, size), kept in list(store.buckets.items()):
        for start in [s for s in kept if s < first[size]]:
            del kept[start]
    for (_key, _group, size), kept in list(store.values.items()):
        for start in [s for s in kept if s < first[size]]:
            del kept[start]
    return store


def rebuild(series: list[Series], *, grace: float | None = None, now=None) -> int:
    """A new generation from the database (see the module), made current. Returns the
    transactions counted."""
    from django.utils import timezone

    conn = client()
    grace = settings.TXN_AGGREGATES_REBUILD_GRACE_S if grace is None else grace
    old = conn.get(PREFIX + "gen")
    gen = str(max(conn.incr(PREFIX + "seq"), int(old or 0) + 1))
    started = now or timezone.now()
    conn.set(PREFIX + "next", gen)  # from here every transaction is counted into it too
    if grace:
        time.sleep(grace)
    try:
        count = _count_history(series, gen, before=started)
    except BaseException:
        conn.delete(PREFIX + "next")
        _delete(f"{PREFIX}{gen}:*")
        raise
    pipe = conn.pipeline(transaction=True)
    pipe.set(PREFIX + "gen", gen)
    pipe.delete(PREFIX + "next")
    pipe.execute()
    if old and old.decode() != gen:
        _delete(f"{PREFIX}{old.decode()}:*")
    logger.info("velocity counters rebuilt in Redis: generation %s, %s transactions", gen, count)
    return count


def series_build(series: Series, *, grace: float | None = None) -> int:
    """A series new to the active rules, added to the current generation from the database.
    Called once the rule's approval has committed (the decisions count it from then on)."""
    from django.utils import timezone

    conn = client()
    gen = conn.get(PREFIX + "gen")
    if gen is None:
        return 0  # not built: the next rebuild builds every series
    # Empty first (what a decision counted since the approval committed is in the history read
    # below), then from this instant the decisions' increments and the history add up.
    _delete(f"{PREFIX}{gen.decode()}:?:{series.key}:*")
    started = timezone.now()
    if grace is None:
        grace = settings.TXN_AGGREGATES_REBUILD_GRACE_S
    if grace:
        time.sleep(grace)
    return _count_history([series], gen.decode(), before=started)


def snapshot() -> tuple[set, set]:
    """Every bucket of the current generation within the retention (for `aggregates_rebuild --check`)."""
    conn = client()
    gen = conn.get(PREFIX + "gen")
    totals, distinct = set(), set()
    if gen is None:
        return totals, distinct
    from django.db.models import Max

    from casework.transactions.models import Transaction

    newest = Transaction.objects.aggregate(newest=Max("occurred_at"))["newest"]
    first = horizon(epoch(newest)) if newest else {}
    base = f"{PREFIX}{gen.decode()}:"
    for name in conn.scan_iter(match=base + "*", count=1000):
        name = name.decode()
        kind, rest = name[len(base)], name[len(base) + 2:]
        series_key, rest = rest.split(":", 1)
        group, size = rest.rsplit(":", 1)
        size = int(size)
        fields = {k.decode(): int(v) for k, v in conn.hgetall(name).items()}
        if kind == "t":
            for field, n in fields.items():
                start = int(field[1:])
                if field[0] == "n" and n and start >= first.get(size, 0):
                    totals.add((series_key, group, size, start, n, fields.get(f"c{start}", 0)))
        else:
            for field in fields:
                start, value = field.split("|", 1)
                if int(start) >= first.get(size, 0):
                    distinct.add((series_key, group, size, int(start), value))
    return totals, distinct
