"""Groundedness: what a finding or a reply states must come from the run's own data.

Every item a type's statements name (test names, account ids, article ids ... as the type
registers them on its Evaluation.grounding, casework.cases.types.Grounding) and, where the type
asks, every number, must appear in what the agents were given in that run:
  - the scenario's input and reference data (the case as it was submitted);
  - every tool result of the run (its output, or the error it answered);
  - every agent call's input (the case data the pipeline hands an agent, an upstream result);
  - the agents' own instructions (a threshold the prompt quotes: "medium at 1.00%").
Never the agents' outputs, nor the arguments a model sent a tool: those are what is checked.

Items are compared as text, case-insensitively; an "amount" item (AMOUNT) by its value.
Numbers are compared by value at the precision stated ("2.00%" is 0.02 at two decimals; "450 ms" is 450.0), so a finding may format a number
but not change it. A number inside an identifier or a date ("rel-2-1-0", "2025-11-10") is not
a number stated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

# A number standing on its own: not part of an identifier, a version or a date.
STATED_NUMBER = re.compile(r"(?<![\w.,\-/:])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(%?)(?![\w\-/:]|[.,]\d)")
ANY_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# An amount's value inside its match ("1,899.00 EUR", "€12.50"): compared by value, not text.
AMOUNT_VALUE = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?()")
# Amounts as types state them: a currency before or after, or thousands separators.
AMOUNT = (r"[€$£]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:EUR|USD|GBP)\b"
          r"|(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,])")
MAX_REPORTED = 20


@dataclass
class Grounded:
    """How many items were checked, and the ones no source holds (each with its statement)."""

    checked: int = 0
    invented: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"checked": self.checked, "invented": self.invented[:MAX_REPORTED]}


def sources_of(scenario_input: dict, reference: dict, calls: list, instructions: list[str]) -> str:
    """The run's own data as one text: the case, tool results, agent inputs, instructions."""
    parts: list = [scenario_input, reference]
    for call in calls:
        if call.kind == "tool":
            parts.append(call.output)
            if call.error:
                parts.append(call.error)
        else:
            parts.append(call.input)
    parts.extend(instructions)
    return json.dumps(parts, ensure_ascii=False, default=str)


def check(statements: list[str], sources: str, *, items: dict[str, str], numbers: bool) -> Grounded:
    result = Grounded()
    haystack = sources.lower()
    values = _numbers(sources)
    seen: set[tuple[str, str]] = set()
    for statement in statements:
        for kind, pattern in items.items():
            for match in re.finditer(pattern, statement):
                item = match.group(0)
                if (kind, item) in seen:
                    continue
                seen.add((kind, item))
                result.checked += 1
                if kind == "amount":
                    number = AMOUNT_VALUE.search(item)
                    grounded = number is not None and _number_grounded(number, values)
                else:
                    grounded = item.lower() in haystack
                if not grounded:
                    result.invented.append({"kind": kind, "item": item, "statement": statement[:300]})
        if not numbers:
            continue
        for match in STATED_NUMBER.finditer(statement):
            item = match.group(0)
            if ("number", item) in seen:
                continue
            seen.add(("number", item))
            result.checked += 1
            if not _number_grounded(match, values):
                result.invented.append({"kind": "number", "item": item, "statement": statement[:300]})
    return result


def _numbers(text: str) -> list[float]:
    return sorted({float(m) for m in ANY_NUMBER.findall(text)})


def _number_grounded(match: re.Match, values: list[float]) -> bool:
    whole, fraction, percent = match.group(1), match.group(2) or "", match.group(3)
    stated = float(whole.replace(",", "") + fraction)
    decimals = max(len(fraction) - 1, 0)
    tolerance = 0.5 * 10 ** -decimals + 1e-9
    for value in values:
        if abs(value - stated) <= tolerance:
            return True
        if percent and abs(value * 100 - stated) <= tolerance:
            return True
    return False


def outputs_of(case) -> dict[str, dict]:
    """The agents' outputs of a case's runs by result key ("orchestrator", "advise.1" ...), the
    last run's winning: what a type's statements(case) reads its findings from."""
    from agents.models import AgentRun

    outputs: dict[str, dict] = {}
    for run in AgentRun.objects.filter(case=case).order_by("id"):
        for key, entry in (run.results or {}).items():
            if isinstance(entry, dict) and isinstance(entry.get("output"), dict):
                outputs[key] = entry["output"]
    return outputs


def texts_in(value, names: tuple[str, ...]) -> list[str]:
    """Every string under one of `names` anywhere in `value` (lists of strings included)."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in names and isinstance(item, str):
                found.append(item)
            elif key in names and isinstance(item, list):
                found.extend(x for x in item if isinstance(x, str))
            else:
                found.extend(texts_in(item, names))
    elif isinstance(value, list):
        for item in value:
            found.extend(texts_in(item, names))
    return found
