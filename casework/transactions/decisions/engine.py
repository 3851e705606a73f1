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

ACTION_ORDER = {ALLOW: 0, BLOCK: 1, REVIEW: 2}


@dataclass(frozen=True)
class LiveRule:
    version_id: int
    rule: str
    number: int
    action: str
    conditions: list
    reason: str

    def as_hit(self) -> dict:
        return {"rule": self.rule, "version": self.number, "action": self.action, "reason": self.reason}


@dataclass
class Answer:
    outcome: str
    hits: list[dict] = field(default_factory=list)
    score: int = 0
    timed_out: bool = False
    rules_evaluated: int = 0


# A version's conditions never change once written, so each is parsed once per process (keyed
# by id and creation time: a test database that resets its sequences reuses ids).
_PARSED: dict[tuple, tuple[list, str]] = {}


def live_rules() -> list[LiveRule]:
    """The active live rule versions in evaluation order (one query)."""
    from casework.transactions.monitoring.models import RuleVersion

    active = list(RuleVersion.objects.filter(status=RuleVersion.Status.ACTIVE, mode=RuleVersion.Mode.LIVE)
                  .values_list("pk", "created_at", "rule__name", "number", "action"))
    missing = [(pk, created) for pk, created, *_ in active if (pk, created) not in _PARSED]
    if missing:  # only versions this process has not seen: the JSON is not read and parsed per request
        for pk, created, conditions in (RuleVersion.objects.filter(pk__in=[pk for pk, _ in missing])
                                        .values_list("pk", "created_at", "conditions")):
            _PARSED[(pk, created)] = (rules.parse(conditions), rules.describe(conditions))
    found = [LiveRule(pk, name, number, action, *_PARSED[(pk, created)])
             for pk, created, name, number, action in active]
    return sorted(found, key=lambda r: (ACTION_ORDER[r.action], r.rule))


def evaluate_live(row: dict, live: Sequence[LiveRule], lookup: ListLookup, *, clock: Callable[[], float],
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
            hits.append(rule.as_hit())
            actions.append(rule.action)
            if rule.action in (ALLOW, BLOCK):
                break  # settled: nothing after it can change the outcome
    outcome = outcome_of(live_actions=actions, listed=listed)
    return Answer(outcome, list_hits + hits, score_of(outcome=outcome, live_actions=actions, listed=listed),
                  rules_evaluated=evaluated)
