"""One transaction's outcome from its live rule hits and its list entries, the same in the
answer at authorisation time (decisions/engine.py) and in the worker's full evaluation
(monitoring/evaluate.py).

Precedence, strongest first:
1. a deny list: block (checked before any rule, so it blocks at once);
2. a live allow rule: allow (two people approved it: it lets the card through, as it always did);
3. a live block rule: block;
4. an allow list: allow (its entry is one person's word: it waives review, never a block rule);
5. a live review rule: review;
6. nothing: allow.
Shadow hits never count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

ALLOW, REVIEW, BLOCK = "allow", "review", "block"


def outcome_of(*, live_actions: Iterable[str], listed: Sequence) -> str:
    actions = set(live_actions)
    kinds = {entry.kind for entry in listed}
    if "deny" in kinds:
        return BLOCK
    if ALLOW in actions:
        return ALLOW
    if BLOCK in actions:
        return BLOCK
    if "allow" in kinds:
        return ALLOW
    if REVIEW in actions:
        return REVIEW
    return ALLOW


def score_of(*, outcome: str, live_actions: Sequence[str], listed: Sequence) -> int:
    """0 to 100, for ranking and thresholds downstream: a deny list 100; a block 90, plus 2 per
    further review or block hit; a review 50, plus 10 per further hit (at most 80); an allow
    0, and 10 per review hit it waived (an allow-listed value with review hits scores above a
    clean one)."""
    flagged = [a for a in live_actions if a in (REVIEW, BLOCK)]
    if any(entry.kind == "deny" for entry in listed):
        return 100
    if outcome == BLOCK:
        return min(100, 90 + 2 * (len(flagged) - 1))
    if outcome == REVIEW:
        return min(80, 50 + 10 * (len(flagged) - 1))
    return min(40, 10 * len(flagged))
