"""The evaluations page: staff only; runs over time per suite as a Chart.js chart (vendored,
no CDN); a run's scenarios with pass/fail and the diff against the baseline; its provider,
model and prompt version."""

from __future__ import annotations

import json

import pytest

from agents.evals.models import eval_run_record
from agents.evals.report import baseline_save, build_report, compare
from agents.evals.schema import suite_types

pytestmark = pytest.mark.django_db


def result(sid, status="passed", decision=1.0):
    return {"id": sid, "category": "high", "status": status, "judge": {"status": "skipped", "reason": "offline"},
            "failures": [] if status == "passed" else ["decision_quality: detective.severity expected 'high', got 'medium'"],
            "scores": {"tool_usage": 1.0, "decision_quality": decision, "error_handling": 1.0}}


CONFIG = {"provider": "offline", "model": "offline-rules-v1", "prompt_version": "abc123def456", "judge": "skipped"}


@pytest.fixture
def two_runs(settings, tmp_path):
    settings.EVALS_BASELINE_DIR = str(tmp_path)
    first = build_report("release_risk", [result("high_p95"), result("low_clean")], config=CONFIG, seconds=1)
    baseline_save({"release_risk": first}, "v1")
    second = build_report("release_risk", [result("high_p95", "failed", 0.0), result("low_clean")], config=CONFIG,
                          seconds=1)
    second["regression_analysis"] = {"baseline": "v1", **compare(second, first)}
    return eval_run_record(report=first), eval_run_record(report=second)


def test_staff_see_runs_over_time_as_a_chart(admin_user, client, two_runs):
    client.force_login(admin_user)
    page = client.get("/evals/")
    html = page.content.decode()
    assert page.status_code == 200
    assert '<canvas id="chart-release_risk"' in html
    assert "/static/vendor/chartjs/chart.umd.min.js" in html and "cdn" not in html.lower()
    # One section per suite, in the types' order (agents.evals.schema.suite_types).
    suites = {suite["name"]: suite for suite in page.context["suites"]}
    assert list(suites) == suite_types()
    data = suites["release_risk"]["chart"]
    assert data["pass_rate"] == [1.0, 0.5] and len(data["labels"]) == 2
    assert 'id="chart-data-release_risk"' in html
    # What the chart draws is the page's JSON: the two runs, oldest first.
    drawn = json.loads(html.split('id="chart-data-release_risk" type="application/json">')[1].split("</script>")[0])
    assert drawn["pass_rate"] == [1.0, 0.5] and len(drawn["labels"]) == 2
    assert drawn["decision_quality"] == [1.0, 0.5] and drawn["tool_usage"] == [1.0, 1.0]
    assert "abc123def456" in html and "offline / offline-rules-v1" in html
    assert "Evaluations</a>" in html  # in the navigation, for staff


def test_a_run_shows_each_scenario_against_the_baseline(admin_user, client, two_runs):
    client.force_login(admin_user)
    html = client.get(f"/evals/runs/{two_runs[1].pk}/").content.decode()
    assert "abc123def456" in html and "offline-rules-v1" in html
    row = html.split('id="scenario-high_p95"')[1].split("</tr>")[0]
    assert "failed" in row and "passed &rarr; failed" in row
    assert "decision_quality -1.00" in row
    assert "detective.severity expected" in row
    assert "Regressions" in html


def test_the_page_is_for_staff_only(alice_client):
    from django.test import Client

    assert alice_client.get("/evals/").status_code == 403
    assert "Evaluations</a>" not in alice_client.get("/cases/").content.decode()
    assert Client().get("/evals/").status_code == 302


def test_the_vendored_chart_library_is_served():
    from django.contrib.staticfiles import finders

    path = finders.find("vendor/chartjs/chart.umd.min.js")
    assert path and "Chart.js v4" in open(path, encoding="utf-8").read(200)


@pytest.mark.django_db(transaction=True)
def test_a_failed_scenario_opens_onto_its_trace_outputs_and_a_diff(client, django_user_model, settings):
    """Run the seed scenario for real, once right and once with the high error-rate threshold
    broken; the failed run's page links the scenario's trace waterfall and diffs its outputs."""
    from agents.evals.evaluate import run_evaluation
    from agents.evals.schema import load_suite
    from tests.evals.conftest import flush

    settings.LLM_PROVIDER = "offline"  # traces go to the configured TRACE_DIR (its exporter is set up once)
    scenarios = [s for s in load_suite("release_risk") if s.id == "high_error_rate"]
    good_report = run_evaluation("release_risk", scenarios=scenarios, reset=flush)
    settings.RELEASE_ERROR_RATE_HIGH = 0.5
    bad_report = run_evaluation("release_risk", scenarios=scenarios, reset=flush)
    # Recorded after the scenarios: each one empties the (test) database first.
    good, bad = eval_run_record(report=good_report), eval_run_record(report=bad_report)
    [scenario] = bad_report["scenarios"]
    assert scenario["status"] == "failed" and scenario["trace_ids"]
    assert [c["name"] for c in scenario["tool_calls"]][:1] == ["get_release_summary"]
    assert scenario["outputs"]["detective"]["severity"] == "medium"

    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "root-pass-123"))
    html = client.get(f"/evals/runs/{bad.pk}/").content.decode()
    assert "nothing: this run was not compared" in html  # never silently against the offline baseline
    detail = html.split('id="detail-high_error_rate"')[1].split("</details>")[0]
    trace_url = f"/evals/runs/{bad.pk}/scenarios/high_error_rate/trace/{scenario['trace_ids'][0]}/"
    assert f'href="{trace_url}"' in detail and " open>" in html.split('id="detail-high_error_rate"')[1][:10]
    assert "get_release_summary" in detail and "&quot;severity&quot;: &quot;medium&quot;" in detail
    trace = client.get(trace_url)
    assert trace.status_code == 200 and trace.context["wf"].rows
    assert any("detective" in row.name for row in trace.context["wf"].rows)
    assert client.get(f"/evals/runs/{bad.pk}/scenarios/high_error_rate/trace/{'0' * 32}/").status_code == 404

    diff = client.get(f"/evals/runs/{bad.pk}/scenarios/high_error_rate/diff/", {"against": good.pk})
    removed = [line["text"] for line in diff.context["lines"] if line["kind"] == "removed"]
    added = [line["text"] for line in diff.context["lines"] if line["kind"] == "added"]
    assert any('"severity": "high"' in line for line in removed)
    assert any('"severity": "medium"' in line for line in added)
    assert client.get(f"/evals/runs/{bad.pk}/scenarios/high_error_rate/diff/", {"against": "x"}).status_code == 400
