"""A closed case exported as a scenario (the person's decision as the expectation, personal
data masked), then re-run as a scenario through the pipeline; the page's "Add to evaluation
suite" saves an edited scenario into the suite, and manage.py export_scenario prints one."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import CommandError, call_command

from agents.evals.export import ExportRefused, scenario_data, scenario_export
from agents.evals.runner import run_scenario
from agents.evals.schema import Scenario, load_suite
from agents.evals.scoring import score
from tests.evals.conftest import flush

pytestmark = pytest.mark.django_db(transaction=True)


def submitted_release(data, outcome, decider, **kwargs):
    from casework.releases.services import release_decide
    from tests.releases.conftest import submit

    release, _ = submit(data)
    release_decide(actor=decider, release=release, outcome=outcome, reason="Refund bug, call me at +31 6 1234 5678",
                   **kwargs)
    release.case.refresh_from_db()
    return release.case


def rerun(text: str, case_type: str):
    scenario = Scenario.model_validate(yaml.safe_load(text))
    observed = run_scenario(case_type, scenario, reset=flush)
    return scenario, observed, score(scenario, observed)


def test_a_closed_release_becomes_a_scenario_that_passes_when_re_run(rita):
    from tests.releases.conftest import SEED

    case = submitted_release(SEED, "no_go", rita)
    data = scenario_data(case)
    assert data["id"] == f"{case.reference.lower()}-export" and data["source"] == case.reference
    assert data["expect"]["fields"] == {"extra.report_severity": "high"}
    assert data["expect"]["tools_in_order"] == ["detective", "get_release_summary", "get_test_details",
                                                "file_risk_report"]
    assert "[number]" in data["expect"]["notes"] and "1234" not in data["expect"]["notes"]
    assert data["input"]["test_details"][1]["message"] == "refund total 0.00 != 19.99"

    scenario, observed, result = rerun(scenario_export(case), "release_risk")
    assert result.passed, result.failures
    assert observed.fields["extra.report_severity"] == "high"


def test_an_open_case_is_not_exported(alice):
    from tests.releases.conftest import LOW, submit

    release, _ = submit(LOW)
    with pytest.raises(ExportRefused, match="not closed"):
        scenario_data(release.case)
    with pytest.raises(CommandError, match="not closed"):
        call_command("export_scenario", release.case.reference)


def test_export_scenario_save_writes_into_its_types_suite_folder(rita, settings, monkeypatch, tmp_path):
    from dataclasses import replace

    from casework.cases.types import CASE_TYPES
    from tests.releases.conftest import LOW

    release_risk = CASE_TYPES["release_risk"]  # its suite's folder, for this test only
    monkeypatch.setattr(release_risk, "evaluation", replace(release_risk.evaluation, suite_dir=tmp_path / "own"))
    case = submitted_release(LOW, "go", rita)
    call_command("export_scenario", case.reference, "--save")
    [path] = (tmp_path / "own").glob("*.yaml")
    assert yaml.safe_load(path.read_text())["source"] == case.reference

    # EVALS_SUITES_DIR, when set, is the root instead: <root>/<case_type>/.
    settings.EVALS_SUITES_DIR = str(tmp_path / "root")
    path.unlink()
    call_command("export_scenario", case.reference, "--save")
    assert [p.name for p in (tmp_path / "root" / "release_risk").glob("*.yaml")] == [path.name]
    assert not list((tmp_path / "own").glob("*.yaml"))


def test_a_fraud_alert_export_masks_the_account_and_re_runs(alice):
    from django.db import transaction

    from casework.cases.services import case_close
    from casework.fraud.services import alert_create

    with transaction.atomic():
        alert = alert_create(actor=alice, data={
            "account_id": "ACC-REAL-4455", "declared_income_annual": 30000, "deposits_total": 160000,
            "deposits_count": 40, "withdrawals_total": 155000, "withdrawals_count": 41,
            "deposit_withdraw_cycle_days_avg": 1.5, "deposits_vs_income_ratio": 5.3, "kyc_face_match_score": 0.5,
            "account_age_days": 20, "vpn_usage_pct": 60, "countries_accessed_count": 6, "device_shared_count": 7,
            "ip_shared_count": 9})
    from agents.evals.runner import drain_runs

    drain_runs()
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Mule, see jan@example.com")
    alert.case.refresh_from_db()
    text = scenario_export(alert.case)
    assert "ACC-REAL-4455" not in text and "jan@example.com" not in text
    data = yaml.safe_load(text)
    assert data["input"]["account_id"] == "ACC-M0001"
    assert data["expect"]["fields"] == {"orchestrator.risk_level": ["high", "critical"]}
    _, _, result = rerun(text, "fraud_alert")
    assert result.passed, result.failures


def test_an_access_change_export_carries_its_organisation_slice_and_answers():
    """The suite's valid-claim scenario, decided, exported and re-run: the same outcome."""
    from agents.evals import adapters
    from casework.access.models import HRMutation
    from casework.access.services import mutation_decide
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create

    [source] = [s for s in load_suite("access_change") if s.id == "valid_sick_cover_manager_approves"]
    run_scenario("access_change", source, reset=flush)
    # The scenario started from an empty database: the investigator who decides comes after.
    alice = user_create(actor="system", username="alice", password="alice-pass-123", role=INVESTIGATOR)
    mutation = HRMutation.objects.select_related("case").get()
    mutation_decide(actor=alice, mutation=mutation, outcome="accepted", reason="Covered for Kees.")
    mutation.case.refresh_from_db()
    text = scenario_export(mutation.case)
    assert "Priya" not in text and "Mona" not in text
    data = yaml.safe_load(text)
    assert data["input"]["employee_answer"]["colleague"] == "u002"
    assert data["input"]["manager_verdict"]["approved"] is True
    assert data["expect"]["fields"] == {"extra.report_recommendation": "accept"}
    assert adapters.evaluation_of("access_change").submit  # the adapter re-creates what the export describes
    _, observed, result = rerun(text, "access_change")
    assert result.passed, (result.failures, observed.trajectory)


def test_add_to_evaluation_suite_page_stores_an_edited_scenario_for_review(rita, alice_client, settings, tmp_path):
    from agents.evals.models import StoredScenario

    settings.EVALS_SUITES_DIR = str(tmp_path)
    from tests.releases.conftest import LOW

    case = submitted_release(LOW, "go", rita)
    page = alice_client.get(f"/cases/{case.reference}/")
    assert f'href="/evals/add/{case.reference}/"' in page.content.decode()
    form = alice_client.get(f"/evals/add/{case.reference}/")
    assert form.status_code == 200
    text = form.context["text"].replace("category: exported", "category: low")

    broken = alice_client.post(f"/evals/add/{case.reference}/", {"scenario": text.replace("id: ", "idx: "),
                                                                "action": "save"})
    assert "extra_forbidden" in broken.context["error"] or "Field required" in broken.context["error"]
    saved = alice_client.post(f"/evals/add/{case.reference}/", {"scenario": text, "action": "save"})
    assert saved.status_code == 302
    # Kept in the database, waiting for a second person: nothing written into the package.
    assert not list(tmp_path.rglob("*.yaml"))
    stored = StoredScenario.objects.get()
    assert (stored.suite, stored.status, stored.source, stored.created_by.username) == (
        "release_risk", "pending", case.reference, "alice")
    scenario = Scenario.model_validate(yaml.safe_load(stored.text))
    assert scenario.category == "low" and scenario.source == case.reference
    again = alice_client.post(f"/evals/add/{case.reference}/", {"scenario": text, "action": "save"})
    assert "already exists" in again.context["error"]
    download = alice_client.post(f"/evals/add/{case.reference}/", {"scenario": text, "action": "download"})
    assert download["Content-Disposition"] == f'attachment; filename="{scenario.id}.yaml"'
