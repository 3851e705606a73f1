"""Scoring one scenario's observed run against its expectation, in the seed's three
dimensions (seed 004, "Evaluation Dimensions"), each 0 to 1 as the mean of its criteria:

- tool_usage: the required agents/tools appear in order (the share matched, greedily, as a
  subsequence of the trajectory); no forbidden one was called;
- decision_quality: each expected decision field matches (one value, or one of a list); each
  must-mention phrase appears in the outputs; each must-not-mention phrase does not;
- error_handling: nothing crashed; every run ended; and, when the scenario injects a fault,
  the failure was noticed and recorded (a call marked error, or the run's status says so) and
  no other call failed in its wake; otherwise no call failed;
- groundedness: the share of the items the findings or replies state (test names, ids,
  amounts, numbers: agents.evals.grounding) that the run's input or tool results hold; each
  invented item fails the scenario, named.

A scenario passes when every criterion is met (ground truth is exact); the scores say how
far off a failing one is. A dimension with no criterion scores 1.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from agents.evals.runner import Observed
from agents.evals.schema import Scenario

DIMENSIONS = ("tool_usage", "decision_quality", "error_handling", "groundedness")
ENDED = {"waiting", "completed", "completed_with_errors", "failed", "timed_out", "cancelled", "budget_reached",
         "stopped", "approval_expired"}
FAILURE_STATUSES = {"completed_with_errors", "failed", "timed_out"}


@dataclass
class Score:
    scores: dict[str, float]
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def score(scenario: Scenario, observed: Observed) -> Score:
    expect = scenario.expect
    criteria: dict[str, list[float]] = {d: [] for d in DIMENSIONS}
    failures: list[str] = []
    names = [step["name"] for step in observed.trajectory]

    if expect.tools_in_order:
        matched = _in_order(expect.tools_in_order, names)
        criteria["tool_usage"].append(matched / len(expect.tools_in_order))
        if matched < len(expect.tools_in_order):
            failures.append(f"tool_usage: expected {' -> '.join(expect.tools_in_order)} in order; "
                            f"{expect.tools_in_order[matched]!r} missing or out of order in "
                            f"{' -> '.join(names) or 'an empty trajectory'}")
    for name in expect.tools_forbidden:
        called = name in names
        criteria["tool_usage"].append(0.0 if called else 1.0)
        if called:
            failures.append(f"tool_usage: forbidden {name!r} was called")

    _trajectory_checks(expect, observed, names, criteria["tool_usage"], failures)

    for name, wanted in expect.fields.items():
        got = observed.fields.get(name, _MISSING)
        ok = got is not _MISSING and _matches(got, wanted)
        criteria["decision_quality"].append(1.0 if ok else 0.0)
        if not ok:
            shown = "absent" if got is _MISSING else repr(got)
            failures.append(f"decision_quality: {name} expected {_show(wanted)}, got {shown}")
    text = observed.text.lower()
    for phrase in expect.must_mention:
        ok = phrase.lower() in text
        criteria["decision_quality"].append(1.0 if ok else 0.0)
        if not ok:
            failures.append(f"decision_quality: the output does not mention {phrase!r}")
    for phrase in expect.must_not_mention:
        ok = phrase.lower() not in text
        criteria["decision_quality"].append(1.0 if ok else 0.0)
        if not ok:
            failures.append(f"decision_quality: the output mentions {phrase!r}, which it must not")

    criteria["error_handling"].append(0.0 if observed.crash else 1.0)
    if observed.crash:
        failures.append(f"error_handling: crashed: {observed.crash}")
    unfinished = [s for s in observed.run_statuses if s not in ENDED]
    criteria["error_handling"].append(0.0 if unfinished or not observed.run_statuses else 1.0)
    if unfinished or not observed.run_statuses:
        failures.append(f"error_handling: runs did not end ({', '.join(observed.run_statuses) or 'no run'})")
    failed_calls = [s for s in observed.trajectory if s["status"] != "ok"]
    if expect.errors_expected:
        noticed = bool(failed_calls) or bool(FAILURE_STATUSES & set(observed.run_statuses))
        criteria["error_handling"].append(1.0 if noticed else 0.0)
        if not noticed:
            failures.append("error_handling: a failure was injected but no call or run records it"
                            + ("" if observed.faults_fired else " (no fault fired)"))
        # Only the faulted calls (and those the scenario names as failing in their wake) may
        # fail: an agent that crashed on what a faulted tool answered is not "handling" it.
        allowed = {f.name for f in scenario.faults} | set(expect.may_fail)
        collateral = [s for s in failed_calls if s["name"] not in allowed]
        criteria["error_handling"].append(0.0 if collateral else 1.0)
        if collateral:
            failures.append("error_handling: call(s) failed beyond the injected fault: "
                            + ", ".join(f"{s['name']} ({s['error_type'] or 'error'})" for s in collateral[:5]))
    else:
        criteria["error_handling"].append(0.0 if failed_calls else 1.0)
        if failed_calls:
            failures.append("error_handling: unexpected failed call(s): "
                            + ", ".join(f"{s['name']} ({s['error_type'] or 'error'})" for s in failed_calls[:5]))

    grounding = observed.grounding
    if grounding and grounding["checked"]:
        invented = grounding["invented"]
        criteria["groundedness"].append(1 - len(invented) / grounding["checked"])
        for item in invented[:5]:
            failures.append(f"groundedness: {item['kind']} {item['item']!r} is in no input or tool result of "
                            f"the run (stated in: {item['statement'][:160]!r})")

    scores = {d: round(sum(v) / len(v), 4) if v else 1.0 for d, v in criteria.items()}
    return Score(scores=scores, failures=failures)


_MISSING = object()


def _trajectory_checks(expect, observed: Observed, names: list[str], criteria: list[float],
                       failures: list[str]) -> None:
    """Tool arguments, forbidden calls, order pairs and call counts (tool_usage)."""
    calls = observed.tool_calls
    for wanted in expect.tool_calls:
        of_tool = [c for c in calls if c["name"] == wanted.tool]
        problems = [_args_problem(wanted, c["arguments"]) for c in of_tool]
        if not of_tool:
            ok, why = False, "never called"
        elif wanted.calls == "every":
            bad = [p for p in problems if p]
            ok, why = not bad, (bad[0] if bad else "")
        else:
            ok = any(p == "" for p in problems)
            why = "" if ok else problems[-1]
        criteria.append(1.0 if ok else 0.0)
        if not ok:
            failures.append(f"tool_usage: {wanted.tool} arguments ({wanted.match}): {why}")
    for forbidden in expect.forbidden_calls:
        hit = next((c for c in calls if c["name"] == forbidden.tool
                    and all(c["arguments"].get(k, _MISSING) == v for k, v in forbidden.args.items())), None)
        criteria.append(0.0 if hit else 1.0)
        if hit:
            failures.append(f"tool_usage: forbidden call {forbidden.tool}({_show_args(hit['arguments'])})")
    for first, then in expect.order:
        ok = first in names and (then not in names or names.index(first) < names.index(then))
        criteria.append(1.0 if ok else 0.0)
        if not ok:
            failures.append(f"tool_usage: {first!r} must come before {then!r}; "
                            + (f"{first!r} was never called" if first not in names else f"{then!r} came first"))
    for name, most in expect.max_calls.items():
        count = len(names) if name == "*" else names.count(name)
        criteria.append(1.0 if count <= most else 0.0)
        if count > most:
            failures.append(f"tool_usage: {'all calls' if name == '*' else repr(name)} called {count} times, "
                            f"at most {most} allowed")


def _args_problem(wanted, got: dict) -> str:
    """'' when the call's arguments match; otherwise what differs."""
    if wanted.match == "exact" and set(got) != set(wanted.args):
        extra, missing = sorted(set(got) - set(wanted.args)), sorted(set(wanted.args) - set(got))
        return "; ".join(filter(None, [f"unexpected {', '.join(extra)}" if extra else "",
                                       f"missing {', '.join(missing)}" if missing else ""]))
    for key, value in wanted.args.items():
        if key not in got:
            return f"{key} missing"
        if wanted.match == "regex":
            if re.fullmatch(str(value), _as_text(got[key])) is None:
                return f"{key}={got[key]!r} does not match /{value}/"
        elif not _matches(got[key], value):
            return f"{key} expected {value!r}, got {got[key]!r}"
    return ""


def _as_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _show_args(args: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in list(args.items())[:4])[:200]


def _in_order(required: list[str], names: list[str]) -> int:
    """How many of `required`, from the first, appear in `names` in that order."""
    position = 0
    for count, wanted in enumerate(required):
        try:
            position = names.index(wanted, position) + 1
        except ValueError:
            return count
    return len(required)


def _matches(got, wanted) -> bool:
    if isinstance(wanted, list):
        return any(_matches(got, w) for w in wanted)
    if isinstance(wanted, float) or isinstance(got, float):
        try:
            return abs(float(got) - float(wanted)) < 1e-9
        except (TypeError, ValueError):
            return False
    return got == wanted


def _show(wanted) -> str:
    return "one of " + ", ".join(map(repr, wanted)) if isinstance(wanted, list) else repr(wanted)
