"""manage.py run_evals: a baseline saved, a deliberately broken rule flagged by --compare
(exit 1 with --fail-on-regression), runs kept for the page, broken files refused.

The command's throwaway database is replaced by the test database here (it is one already), except
in the last test, which runs the real one;
agents.evals.isolation's own refusal to empty anything else is tested on its own."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from agents.evals import isolation
from agents.evals.models import EvalRun
from agents.evals.schema import load_suite
from tests.evals.conftest import flush

pytestmark = pytest.mark.django_db(transaction=True)

PICKED = ("high_error_rate", "boundary_error_rate_at_high", "low_clean", "fault_summary_tool_error")


@pytest.fixture
def command(monkeypatch, settings, tmp_path):
    from contextlib import nullcontext

    from agents.evals.management.commands import run_evals

    settings.EVALS_BASELINE_DIR = str(tmp_path)
    monkeypatch.setattr(run_evals, "evaluation_database", nullcontext)
    monkeypatch.setattr(run_evals, "flush_evaluation_database", flush)
    subset = [s for s in load_suite("release_risk") if s.id in PICKED]
    monkeypatch.setattr(run_evals, "load_suite", lambda name: subset)
    return tmp_path


def run(*args):
    call_command("run_evals", "--suite", "release_risk", *args)
    return EvalRun.objects.order_by("-id").first()


def test_compare_flags_a_rule_that_someone_breaks(command, settings, capsys):
    first = run("--save-baseline", "v1")
    assert first.passed == first.total == 4
    assert json.loads((command / "v1.json").read_text())["suites"]["release_risk"]["summary"]["pass_rate"] == 1.0

    # Someone raises the high error-rate threshold: 7% and exactly 5% are no longer high.
    settings.RELEASE_ERROR_RATE_HIGH = 0.10
    second = run("--compare", "v1")
    err = capsys.readouterr().err
    assert "REGRESSION pass_rate: 1.0 -> 0.5 (-50.0%)" in err
    assert "REGRESSION high_error_rate: passed -> failed" in err
    # pass rate, decision quality, tool usage (the severity argument filed), two scenarios
    assert second.regressions == 5
    assert {r.get("metric") for r in second.report["regression_analysis"]["regressions"]} >= {
        "pass_rate", "avg_scores.decision_quality", "avg_scores.tool_usage"}
    assert second.baseline == "v1"

    with pytest.raises(CommandError, match="regression") as caught:
        run("--compare", "v1", "--fail-on-regression")
    assert caught.value.returncode == 1
    # Without the flag a regression is a warning; an unchanged rule is no regression at all.
    settings.RELEASE_ERROR_RATE_HIGH = 0.05
    last = run("--compare", "v1", "--fail-on-regression")
    assert (last.regressions, last.pass_rate, last.provider, last.model) == (0, 1.0, "offline", "offline-rules-v1")
    assert last.prompt_version and last.report["summary"]["total_scenarios"] == 4


def test_an_unknown_baseline_is_refused(command):
    with pytest.raises(CommandError, match="No baseline 'v9'"):
        run("--compare", "v9")


def test_a_broken_scenario_file_is_refused_naming_file_and_field(monkeypatch, tmp_path):
    from dataclasses import replace

    from casework.cases.types import CASE_TYPES

    folder = tmp_path / "release_risk"
    folder.mkdir()
    (folder / "bad.yaml").write_text("id: bad\ncategory: high\ninput: {}\nexpect: {fields: []}\n")
    release_risk = CASE_TYPES["release_risk"]  # its suite's folder, for this test only
    monkeypatch.setattr(release_risk, "evaluation", replace(release_risk.evaluation, suite_dir=folder))
    with pytest.raises(CommandError, match=r"release_risk/bad.yaml: expect.fields: "):
        call_command("run_evals", "--suite", "release_risk")


def test_the_throwaway_database_is_the_only_one_ever_emptied():
    with pytest.raises(RuntimeError, match="Refusing to empty"):
        isolation.flush_evaluation_database()


def test_the_command_runs_in_a_throwaway_database_and_drops_it(settings, alice, capsys):
    """The real path, nothing replaced: the command migrates a database of its own, empties it
    before each scenario, keeps the run's record in the database it was started on, and drops
    its own. A case already here is neither seen nor emptied by the scenarios."""
    from django.db import connection

    from casework.cases.models import Case
    from casework.cases.services import case_create

    settings.LLM_PROVIDER = "offline"
    ours = case_create(actor=alice, case_type="fraud_alert", title="Not an evaluation's case")
    here = connection.settings_dict["NAME"]

    call_command("run_evals", "--suite", "release_risk", "--scenario", "low_clean", "--scenario", "high_error_rate")

    assert "2/2 passed" in capsys.readouterr().out
    assert connection.settings_dict["NAME"] == here  # back on the database it started on
    assert list(Case.objects.values_list("pk", flat=True)) == [ours.pk]  # the scenarios' cases went with theirs
    run = EvalRun.objects.get()
    assert (run.passed, run.total) == (2, 2)
    if connection.vendor == "sqlite":
        assert not list(settings.VAR_DIR.glob("evals-*.sqlite3"))
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [f"{here}_evals_%"])
            assert cursor.fetchall() == []
