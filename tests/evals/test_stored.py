"""Suites people grow safely (issue 27, point 8): a scenario added from a case is stored in the
database, runs only once a second person approved it, and is exported to files for version
control; run_evals reads the files and the approved stored scenarios."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import CommandError, call_command

from agents.evals.export import scenario_export
from agents.evals.models import EvalRun, StoredScenario
from agents.evals.stored import ReviewRefused, stored_scenario_add, stored_scenario_review
from casework.people.roles import ADMIN
from casework.people.services import user_create
from tests.evals.conftest import flush
from tests.evals.test_export import submitted_release

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def stored(rita, alice):
    from tests.releases.conftest import LOW

    case = submitted_release(LOW, "go", rita)
    text = scenario_export(case).replace("category: exported", "category: low")
    scenario = stored_scenario_add(case=case, text=text, actor=alice)
    return StoredScenario.objects.get(scenario_id=scenario.id)


def test_a_second_person_reviews_and_only_approved_scenarios_run_and_export(stored, alice, client, tmp_path,
                                                                            monkeypatch, settings, capsys):
    from contextlib import nullcontext

    from agents.evals.management.commands import run_evals

    with pytest.raises(ReviewRefused, match="not the one who added it"):
        stored_scenario_review(stored=stored, actor=alice, approve=True)
    root = user_create(actor="system", username="root", password="root-pass-123", role=ADMIN)
    client.force_login(root)
    page = client.get("/evals/scenarios/").content.decode()
    assert stored.scenario_id in page and "Approve" in page
    assert client.post(f"/evals/scenarios/{stored.pk}/review/", {"action": "reject"}).status_code == 302
    stored.refresh_from_db()
    assert stored.status == "pending"  # a rejection needs a reason
    client.post(f"/evals/scenarios/{stored.pk}/review/", {"action": "approve", "note": "Matches the decision."})
    stored.refresh_from_db()
    assert (stored.status, stored.reviewed_by, stored.review_note) == ("approved", root, "Matches the decision.")
    with pytest.raises(ReviewRefused, match="already approved"):
        stored_scenario_review(stored=stored, actor=root, approve=False, note="x")

    call_command("export_scenarios", str(tmp_path))
    [path] = tmp_path.glob("release_risk/*.yaml")
    assert yaml.safe_load(path.read_text())["id"] == stored.scenario_id
    # Without a directory: into the type's own suite folder (here a temporary one).
    from dataclasses import replace

    from casework.cases.types import CASE_TYPES

    release_risk = CASE_TYPES["release_risk"]
    with monkeypatch.context() as patch:
        patch.setattr(release_risk, "evaluation", replace(release_risk.evaluation, suite_dir=tmp_path / "own"))
        call_command("export_scenarios")
    assert [p.name for p in (tmp_path / "own").glob("*.yaml")] == [path.name]

    settings.LLM_PROVIDER = "offline"
    monkeypatch.setattr(run_evals, "evaluation_database", nullcontext)
    monkeypatch.setattr(run_evals, "flush_evaluation_database", lambda: None)  # keep the stored row
    call_command("run_evals", "--suite", "release_risk", "--scenario", stored.scenario_id, "--scenario", "low_clean")
    run = EvalRun.objects.order_by("-id").first()
    assert sorted(s["id"] for s in run.report["scenarios"]) == sorted([stored.scenario_id, "low_clean"])


def test_a_pending_scenario_does_not_run(stored, monkeypatch):
    from contextlib import nullcontext

    from agents.evals.management.commands import run_evals

    monkeypatch.setattr(run_evals, "evaluation_database", nullcontext)
    monkeypatch.setattr(run_evals, "flush_evaluation_database", flush)
    with pytest.raises(CommandError, match="No scenario matches"):
        call_command("run_evals", "--suite", "release_risk", "--scenario", stored.scenario_id)
