"""What a scenario file holds, and reading suites of them.

A suite is a folder of YAML files, one scenario per file, for each case type that registered an
evaluation (casework.cases.types.Evaluation): its `suite_dir`, in the type's own package
(casework/<type>/scenarios/). Every file is validated against `Scenario`; a broken file is
refused with a ScenarioFileError naming the file as <suite>/<file> and the field
("fraud_alert/high_vpn.yaml: expect.fields: ...").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError


def suite_types() -> list[str]:
    """The suites there may be: the case types that registered an evaluation, in the order the
    types registered (read when asked for: the types register themselves once apps are ready)."""
    from casework.cases.types import CASE_TYPES

    return [key for key, case_type in CASE_TYPES.items() if case_type.evaluation is not None]


def suite_folder(name: str, root: Path | None = None) -> Path | None:
    """A suite's folder: `root`/<name> when a root is given (tests, an export's target), else
    the folder its type's evaluation names (`suite_dir`); None when it names none."""
    if root is not None:
        return root / name
    from agents.evals.adapters import evaluation_of

    own = getattr(evaluation_of(name), "suite_dir", None)
    return Path(own) if own else None


class ScenarioFileError(ValueError):
    """A scenario file that cannot be used: names the file and the field."""

    def __init__(self, path: str, field: str, message: str):
        super().__init__(f"{path}: {field}: {message}")
        self.path, self.field, self.message = path, field, message


class Fault(BaseModel):
    """One injected failure: every call (or the first `times` calls) of the named LLM agent
    or tool fails the given way, for the duration of the scenario only."""

    model_config = ConfigDict(extra="forbid")

    target: Literal["llm", "tool"] = Field(description="An LLM call (by agent id) or a tool call (by tool name).")
    name: str = Field(min_length=1, description="The agent id (llm) or the tool name (tool).")
    kind: Literal["error", "timeout", "malformed"] = Field(
        description="error: the provider or tool fails; timeout: it does not answer in time; "
                    "malformed: it answers something that does not fit its schema.")
    times: int | None = Field(None, ge=1, description="Fail only the first N calls; all of them when empty.")


class ToolCallExpectation(BaseModel):
    """A tool call with its arguments: `exact` (these arguments and no others), `subset` (at
    least these, equal), or `regex` (each named argument's value, as text, matches the
    pattern in full). `calls`: whether one call of the tool must match (`any`) or each one
    (`every`)."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    match: Literal["exact", "subset", "regex"] = "subset"
    calls: Literal["any", "every"] = "any"

    @model_validator(mode="after")
    def _patterns_compile(self):
        if self.match == "regex":
            for name, pattern in self.args.items():
                try:
                    re.compile(str(pattern))
                except re.error as exc:
                    raise ValueError(f"args.{name}: not a regular expression ({exc})") from None
        return self


class ForbiddenCall(BaseModel):
    """A call that must not happen: the tool (any call of it, when `args` is empty), or the
    tool with these arguments (subset)."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class Criterion(BaseModel):
    """One thing the judge decides about the outputs, scored 0 to 1 with a reason; it passes
    at or above its threshold. The rubric's score is the weighted mean of its criteria."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=60, pattern=r"^[a-z0-9][a-z0-9_]*$")
    question: str = Field(min_length=10, max_length=1000, description="What the judge decides, as a question.")
    weight: float = Field(1.0, gt=0, le=100)
    threshold: float = Field(0.7, ge=0, le=1)


class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Decision fields, by dotted name ("case.priority", "detective.severity"): one value, or a
    # list of acceptable values.
    fields: dict[str, Any] = Field(default_factory=dict)
    # Agent and tool names that must appear in the run's trajectory, in this order (others
    # may come between them).
    tools_in_order: list[str] = Field(default_factory=list)
    tools_forbidden: list[str] = Field(default_factory=list)
    # Tool calls with their arguments (ToolCallExpectation), calls that must not happen,
    # pairs [A, B]: A is called and its first call comes before B's first call, and the most
    # calls of an agent or tool ("*": of all calls together).
    tool_calls: list[ToolCallExpectation] = Field(default_factory=list)
    forbidden_calls: list[ForbiddenCall] = Field(default_factory=list)
    order: list[tuple[str, str]] = Field(default_factory=list)
    max_calls: dict[str, int] = Field(default_factory=dict)
    # Case-insensitive substrings of the agents' outputs.
    must_mention: list[str] = Field(default_factory=list)
    must_not_mention: list[str] = Field(default_factory=list)
    # Whether some agent or tool call is expected to fail (a fault scenario): True means at
    # least one call failed AND the run still ended (completed_with_errors, or a failure the
    # case records); False means none failed.
    errors_expected: bool = False
    # Agents or tools that may fail besides the faulted ones (an agent whose only input was
    # the faulted tool, say); any other failed call fails the scenario.
    may_fail: list[str] = Field(default_factory=list)
    # The LLM judge's criteria (Criterion): the scenario passes only when each is met; offline
    # they are reported "not scored", never passed.
    rubric: list[Criterion] = Field(default_factory=list)
    # Free text for a reviewer (what a free-text "rubric" used to hold: the judge ignores it).
    notes: str = ""

    @model_validator(mode="before")
    @classmethod
    def _free_text_rubric_is_a_note(cls, data):
        if isinstance(data, dict) and isinstance(data.get("rubric"), str):
            data = {**data, "notes": (data.get("notes") or data["rubric"]), "rubric": []}
        return data

    @field_validator("rubric")
    @classmethod
    def _criteria_ids_unique(cls, value: list) -> list:
        ids = [c.id for c in value]
        if len(ids) != len(set(ids)):
            raise ValueError("two criteria share an id")
        return value

    @field_validator("max_calls")
    @classmethod
    def _at_least_one(cls, value: dict) -> dict:
        for name, most in value.items():
            if most < 0:
                raise ValueError(f"{name}: the most calls cannot be negative")
        return value

    @field_validator("fields")
    @classmethod
    def _names_are_dotted(cls, value: dict) -> dict:
        for name in value:
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"field name {name!r} is empty")
        return value


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=100, pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    category: str = Field(min_length=1, max_length=50)
    description: str = ""
    # The case's data as the API would take it.
    input: dict[str, Any]
    # Reference data the case needs (customers, articles, an organisation, card history).
    reference: dict[str, Any] = Field(default_factory=dict)
    faults: list[Fault] = Field(default_factory=list)
    expect: Expectation
    # Where the scenario came from (an exported case's reference), for the record.
    source: str = ""
    # Questions put to "Ask the agent" on the case once its runs have ended, in order, as one
    # conversation: the answers count as outputs (must_mention, groundedness), their tool calls
    # join the trajectory, and `chat.case_unchanged` says whether the case stayed as it was.
    chat: list[str] = Field(default_factory=list, max_length=10)
    # Labels for `run_evals --tag` (the category counts as a tag too).
    tags: list[str] = Field(default_factory=list)


def load_scenario(path: Path, *, root: Path | None = None, label: str = "") -> Scenario:
    label = label or _label(path, root)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "file"
        raise ScenarioFileError(label, where, f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(raw, dict):
        raise ScenarioFileError(label, "file", "a scenario is a mapping (id, category, input, expect ...)")
    try:
        return Scenario.model_validate(raw)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "file"
        raise ScenarioFileError(label, field, first["msg"]) from None


def suite_names(root: Path | None = None) -> list[str]:
    """The suites whose folder of scenario files exists: what run_evals runs by default."""
    folders = {name: suite_folder(name, root) for name in suite_types()}
    return [name for name, folder in folders.items() if folder is not None and folder.is_dir()]


def load_suite(name: str, *, root: Path | None = None) -> list[Scenario]:
    """Every scenario of a suite, sorted by file name; refuses the suite on the first broken
    file, and on two files with one id."""
    if name not in suite_types():
        raise ScenarioFileError(name, "suite", f"not a case type; use one of {', '.join(suite_types())}")
    folder = suite_folder(name, root)
    scenarios: list[Scenario] = []
    seen: dict[str, str] = {}
    for path in sorted(folder.glob("*.y*ml")) if folder is not None else []:
        label = f"{name}/{path.name}"  # wherever the suite's folder is
        scenario = load_scenario(path, label=label)
        if scenario.id in seen:
            raise ScenarioFileError(label, "id", f"{scenario.id!r} is also the id in {seen[scenario.id]}")
        seen[scenario.id] = label
        scenarios.append(scenario)
    return scenarios


def scenario_yaml(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def _label(path: Path, root: Path | None) -> str:
    try:
        return str(path.relative_to(root)) if root is not None else str(path)
    except ValueError:
        return str(path)
