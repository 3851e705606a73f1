"""From a closed case to a scenario: its input as the API would take it, the reference data
it needs, the person's decision as the expected decision fields, the agents' trajectory as the
tools expected in order; personal data masked (names, emails, customer and account ids, card
holder, devices, and emails / phone numbers / long digit runs inside free text).

What a case type's record exports as (input, reference, fields), and which fields each
outcome expects, the type registers on its CaseType (casework.cases.types.Evaluation).

Used by `manage.py export_scenario REF` and "Add to evaluation suite" on the case page.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from django.conf import settings

from agents.evals.adapters import evaluation_of
from agents.evals.schema import Scenario, ScenarioFileError, scenario_yaml, suite_folder

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
_DIGITS = re.compile(r"\+?\d[\d ().-]{7,}\d")


class ExportRefused(Exception):
    pass


class Masker:
    """Consistent pseudonyms: the same value gets the same mask within one export."""

    def __init__(self):
        self.seen: dict[tuple[str, str], str] = {}

    def __call__(self, kind: str, value) -> str:
        if value in (None, ""):
            return value
        key = (kind, str(value))
        if key not in self.seen:
            number = sum(1 for k in self.seen if k[0] == kind) + 1
            self.seen[key] = {"name": f"Person {number}", "customer": f"CUST-M{number:04d}",
                              "account": f"ACC-M{number:04d}", "card": f"CARD-M{number:04d}",
                              "device": f"device-m{number}", "login": f"manager-m{number}"}[kind]
        return self.seen[key]

    @staticmethod
    def text(value: str) -> str:
        return _DIGITS.sub("[number]", _EMAIL.sub("[email]", value or ""))


def suites_root() -> Path | None:
    """Where saved scenarios go instead of each type's own suite folder: EVALS_SUITES_DIR, as
    <root>/<case_type>/ (tests point it at a temporary folder so nothing lands in a package);
    None, the default: the type's `suite_dir`."""
    root = getattr(settings, "EVALS_SUITES_DIR", "")
    return Path(root) if root else None


def scenario_data(case) -> dict:
    """The scenario as a dict (before YAML)."""
    from casework.cases.selectors import case_final_decision

    if not case.is_closed:
        raise ExportRefused(f"{case.reference} is not closed: only a decided case becomes a scenario.")
    decision = case_final_decision(case)
    if decision is None:
        raise ExportRefused(f"{case.reference} has no final decision to take as the ground truth.")
    evaluation = evaluation_of(case.case_type)
    if evaluation is None or evaluation.export is None or case.record is None:
        raise ExportRefused(f"{case.reference}: its case type cannot be exported.")
    mask = Masker()
    input_data, reference, fields = evaluation.export(case.record, mask)
    fields = {**fields, **evaluation.decision_fields.get(decision.outcome, {})}
    expect = {"fields": fields, "tools_in_order": _trajectory(case),
              "notes": f"The person decided {decision.outcome!r}: "
                        f"{Masker.text(decision.reason)[:500] or 'no reason given'}."}
    data = {"id": f"{case.reference.lower()}-export", "category": "exported",
            "description": f"Exported from {case.reference} (decided {decision.outcome}); personal data masked.",
            "input": input_data}
    if reference:
        data["reference"] = reference
    data["expect"] = expect
    data["source"] = case.reference
    return data


def scenario_export(case) -> str:
    return scenario_yaml(scenario_data(case))


def scenario_validate_text(text: str, *, label: str) -> Scenario:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioFileError(label, "file", f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(raw, dict):
        raise ScenarioFileError(label, "file", "a scenario is a mapping")
    from pydantic import ValidationError

    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ScenarioFileError(label, ".".join(map(str, first["loc"])) or "file", first["msg"]) from None


def scenario_save(*, case, text: str, actor) -> Path:
    """Validate the (edited) scenario and add it to the case type's suite; audited."""
    from audit.services import audit_record

    scenario = scenario_validate_text(text, label=f"{case.case_type}/{case.reference.lower()}-export.yaml")
    folder = suite_folder(case.case_type, suites_root())
    if folder is None:
        raise ScenarioFileError(case.case_type, "suite", "its case type keeps no scenario files (Evaluation.suite_dir)")
    path = folder / f"{scenario.id}.yaml"
    if path.exists():
        raise ScenarioFileError(f"{case.case_type}/{path.name}", "id", f"a scenario {scenario.id!r} already exists")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    audit_record(actor=actor, action="evals.scenario_added", case=case,
                 data={"suite": case.case_type, "scenario": scenario.id})
    return path


def _trajectory(case) -> list[str]:
    """The agents and tools the case's runs called, each once, in the order first called; a
    type whose fan-out's order varies between runs says what is stable (Evaluation.trajectory)."""
    from agents.models import AgentCall

    evaluation = evaluation_of(case.case_type)
    if evaluation is not None and evaluation.trajectory is not None:
        return evaluation.trajectory(case)
    names: list[str] = []
    for name in (AgentCall.objects.filter(run__case=case).exclude(run__mode="close")
                 .order_by("id").values_list("name", flat=True)):
        if name not in names:
            names.append(name)
    return names
