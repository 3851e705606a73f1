"""Scenarios stored in the database (agents.evals.models.StoredScenario): added from a closed
case by one person, approved or rejected by another, read by run_evals beside the suite's
files once approved, and exported to files for version control."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction
from django.utils import timezone

from agents.evals.schema import Scenario, ScenarioFileError, suite_folder


class ReviewRefused(Exception):
    pass


@transaction.atomic
def stored_scenario_add(*, case, text: str, actor) -> Scenario:
    """Validate the (edited) scenario and keep it, waiting for a second person; audited. Only
    from a case the person may see (casework.cases.visibility)."""
    from django.core.exceptions import PermissionDenied

    from agents.evals.export import scenario_validate_text
    from agents.evals.models import StoredScenario
    from agents.evals.schema import load_suite
    from audit.services import audit_record
    from casework.cases.visibility import case_visible

    if not case_visible(actor, case):
        raise PermissionDenied("Only a case you may see becomes a scenario.")

    label = f"{case.case_type}/{case.reference.lower()}-export.yaml"
    scenario = scenario_validate_text(text, label=label)
    if (StoredScenario.objects.filter(suite=case.case_type, scenario_id=scenario.id).exists()
            or any(s.id == scenario.id for s in load_suite(case.case_type))):
        raise ScenarioFileError(label, "id", f"a scenario {scenario.id!r} already exists")
    stored = StoredScenario(suite=case.case_type, scenario_id=scenario.id, text=text, source=case.reference,
                            created_by=actor)
    stored.full_clean()
    stored.save()
    audit_record(actor=actor, action="evals.scenario_added", case=case, obj=stored,
                 data={"suite": case.case_type, "scenario": scenario.id, "status": stored.status})
    return scenario


@transaction.atomic
def stored_scenario_review(*, stored, actor, approve: bool, note: str = "") -> None:
    """Approve or reject a stored scenario: only a person other than its author, only once."""
    from agents.evals.models import StoredScenario
    from audit.services import audit_record

    locked = StoredScenario.objects.select_for_update().get(pk=stored.pk)
    if locked.created_by_id == actor.pk:
        raise ReviewRefused("A second person reviews a scenario: not the one who added it.")
    if locked.status != StoredScenario.Status.PENDING:
        raise ReviewRefused(f"This scenario was already {locked.get_status_display().lower()}.")
    if not approve and not note.strip():
        raise ReviewRefused("Say why the scenario is rejected.")
    locked.status = StoredScenario.Status.APPROVED if approve else StoredScenario.Status.REJECTED
    locked.reviewed_by, locked.reviewed_at, locked.review_note = actor, timezone.now(), note.strip()[:2000]
    locked.full_clean()
    locked.save(update_fields=["status", "reviewed_by", "reviewed_at", "review_note"])
    audit_record(actor=actor, action="evals.scenario_reviewed", obj=locked,
                 data={"suite": locked.suite, "scenario": locked.scenario_id, "status": locked.status})


def approved_scenarios(suite: str) -> list[Scenario]:
    from agents.evals.export import scenario_validate_text
    from agents.evals.models import StoredScenario

    return [scenario_validate_text(s.text, label=f"{suite}/{s.scenario_id} (stored)")
            for s in StoredScenario.objects.filter(suite=suite, status=StoredScenario.Status.APPROVED)]


def suite_with_stored(suite: str) -> list[Scenario]:
    """The suite's files and its approved stored scenarios (an id in both: refused)."""
    from agents.evals.schema import load_suite

    files = load_suite(suite)
    ids = {s.id for s in files}
    stored = approved_scenarios(suite)
    for scenario in stored:
        if scenario.id in ids:
            raise ScenarioFileError(f"{suite}/{scenario.id} (stored)", "id", "is also the id of a file in the suite")
    return files + stored


def stored_scenarios_export(directory: Path | None = None) -> list[Path]:
    """Write every approved stored scenario to its suite's folder (DIR/<suite>/ when a
    directory is given, else its type's Evaluation.suite_dir) as <id>.yaml; returns the paths.
    A suite without a folder refuses the export before anything is written."""
    from agents.evals.models import StoredScenario

    approved = list(StoredScenario.objects.filter(status=StoredScenario.Status.APPROVED)
                    .order_by("suite", "scenario_id"))
    folders = {stored.suite: suite_folder(stored.suite, directory) for stored in approved}
    for suite, folder in folders.items():
        if folder is None:
            raise ScenarioFileError(suite, "suite", "its case type keeps no scenario files (Evaluation.suite_dir); "
                                                    "give a directory")
    written = []
    for stored in approved:
        path = folders[stored.suite] / f"{stored.scenario_id}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(stored.text if stored.text.endswith("\n") else stored.text + "\n", encoding="utf-8")
        written.append(path)
    return written
