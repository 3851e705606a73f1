"""Time buckets for aggregates: which buckets a transaction adds to, and which a window reads.

Counters are kept in buckets of three sizes: a minute, an hour and a day (the bucket's start
is an epoch second, aligned to its size). A transaction adds to one bucket of each size. A
window of W seconds ending with a transaction at t is read as the buckets that overlap
(t - W, t], its start rounded down to the window's granularity (a minute for W up to an
hour, an hour for W up to 7 days, a day beyond), covered with the largest aligned buckets
that fit: at most 23 hours + 90 days + 23 hours + 59 minutes, about 200 buckets for a 90-day
window, in at most five ranges: a read costs the same whatever the history's size.

So a 10-minute window counts whole minutes (from the minute ten minutes before the
transaction's to the transaction's own), a 30-day one whole days at its start and whole
minutes at its end. Buckets older than their size's RETENTION are never read again, and are
pruned.
"""

from __future__ import annotations

from datetime import datetime

MINUTE, HOUR, DAY = 60, 3600, 86400
SIZES = (DAY, HOUR, MINUTE)
# How long a size's buckets are read: a window up to an hour reads minutes of the last
# 61 minutes, any window reads the minutes of the current hour; up to 7 days reads hours of
# the last 7 days and an hour; up to 90 days reads days of the last 91.
RETENTION = {MINUTE: 2 * HOUR, HOUR: 8 * DAY, DAY: 92 * DAY}


def epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def granularity(window: int) -> int:
    return MINUTE if window <= HOUR else HOUR if window <= 7 * DAY else DAY


def starts(t: int) -> list[tuple[int, int]]:
    """(size, start) of the buckets a transaction at t adds to."""
    return [(size, t // size * size) for size in SIZES]


def cover(t: int, window: int) -> list[tuple[int, int, int]]:
    """The buckets a window ending at t reads, as ranges (size, first start, last start): from
    its start (rounded down to its granularity) to the end of t's minute, always the largest
    aligned bucket that fits: minutes up to the hour, hours up to the day, days, then hours
    and minutes to the end. Computed by arithmetic, a few steps whatever the window."""
    cur = (t - window) // granularity(window) * granularity(window)
    end = t // MINUTE * MINUTE + MINUTE
    ranges: list[tuple[int, int, int]] = []

    def emit(size: int, count: int) -> None:
        nonlocal cur
        if count <= 0:
            return
        if ranges and ranges[-1][0] == size and ranges[-1][2] + size == cur:
            ranges[-1] = (size, ranges[-1][1], cur + (count - 1) * size)
        else:
            ranges.append((size, cur, cur + (count - 1) * size))
        cur += count * size

    ascending = (MINUTE, HOUR, DAY)
    level = 0
    while level < 2:  # climb: the small buckets up to the next larger size's boundary
        small, large = ascending[level], ascending[level + 1]
        if cur % large:
            boundary = -(-cur // large) * large
            if boundary > end:
                break
            emit(small, (boundary - cur) // small)
        level += 1
    for size in reversed(ascending[:level + 1]):  # the largest that fit, then smaller to the end
        emit(size, (end - cur) // size)
    return ranges


def bucket_count(ranges: list[tuple[int, int, int]]) -> int:
    return sum((last - first) // size + 1 for size, first, last in ranges)


def horizon(newest: int) -> dict[int, int]:
    """Per size, the first bucket start still read when the newest transaction is at `newest`."""
    now = newest // MINUTE * MINUTE
    return {size: (now - keep) // size * size for size, keep in RETENTION.items()}
