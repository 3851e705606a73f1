"""The answer at authorisation time: the live rules evaluated on one transaction, in order,
against a deadline.

Order: the deny and allow lists first (one indexed lookup per value, lists/lookup.py); then
the live rules, allow rules first, then block rules, then review rules (by name within each
action). So the evaluation can stop at the first hit that settles the outcome (outcome.py):
an allow rule's hit (only a deny list beats it, and the lists were read first), or a block
rule's (every allow rule has been evaluated by then). An allow-listed transaction skips the
review rules, which cannot change its outcome. Shadow rules are never evaluated here: they
run in the worker after the answer (monitoring/evaluate.py), with every live rule again, and
that full evaluation records its hits on the decision.

The deadline is checked between rules, on a monotonic clock the caller gives (tests give one
that advances a step per call): nothing is interrupted, a rule that has started finishes.
Past the deadline the outcome is the fallback (TXN_DECISION_FALLBACK), marked timed out,
unless a deny list already decided it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from casework.transactions import rules
from casework.transactions.decisions.outcome import ALLOW, BLOCK, REVIEW, outcome_of, score_of
from casework.transactions.lists.lookup import ListLookup
from casework.transactions.ruleset import CompiledRule


@dataclass
class Answer:
    outcome: str
    hits: list[dict] = field(default_factory=list)
    score: int = 0
    timed_out: bool = False
    rules_evaluated: int = 0


def evaluate_live(row: dict, live: Sequence[CompiledRule], lookup: ListLookup, *, clock: Callable[[], float],
                  deadline: float, fallback: str) -> Answer:
    listed = lookup.listed(row)
    list_hits = [entry.as_hit() for entry in listed]
    if any(entry.kind == "deny" for entry in listed):
        return Answer(BLOCK, list_hits, score_of(outcome=BLOCK, live_actions=[], listed=listed))
    allow_listed = bool(listed)  # what is left on it is an allow list
    hits: list[dict] = []
    actions: list[str] = []
    evaluated = 0
    for rule in live:
        if allow_listed and rule.action == REVIEW:
            break  # review rules come last and cannot change an allow-listed outcome
        if clock() >= deadline:
            return Answer(fallback, list_hits + hits, score_of(outcome=fallback, live_actions=actions, listed=listed),
                          timed_out=True, rules_evaluated=evaluated)
        evaluated += 1
        if rules.rule_matches(rule.conditions, row, lookup):
            hits.append(rule.as_hit(row))  # the reason with the values compared (rules.explain)
            actions.append(rule.action)
            if rule.action in (ALLOW, BLOCK):
                break  # settled: nothing after it can change the outcome
    outcome = outcome_of(live_actions=actions, listed=listed)
    return Answer(outcome, list_hits + hits, score_of(outcome=outcome, live_actions=actions, listed=listed),
                  rules_evaluated=evaluated)
