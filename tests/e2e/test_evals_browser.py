"""The evaluations page in Chromium: two runs of a suite drawn by the vendored Chart.js (no
CDN), under the Content-Security-Policy, and a run's scenarios one click away."""

from __future__ import annotations

import pytest

from agents.evals.models import eval_run_record
from agents.evals.report import build_report
from casework.people.roles import ADMIN
from casework.people.services import user_create

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def report(passed: bool):
    scenario = {"id": "high_p95", "category": "high", "status": "passed" if passed else "failed",
                "failures": [] if passed else ["decision_quality: detective.severity expected 'high', got 'medium'"],
                "judge": {"status": "skipped", "reason": "offline"},
                "scores": {"tool_usage": 1.0, "decision_quality": 1.0 if passed else 0.0, "error_handling": 1.0}}
    return build_report("release_risk", [scenario], seconds=1.0,
                        config={"provider": "offline", "model": "offline-rules-v1", "prompt_version": "p1",
                                "judge": "skipped"})


def test_staff_see_two_runs_drawn_as_a_chart(page, log_in):
    user_create(actor="system", username="root", password="root-pass-123", role=ADMIN)
    eval_run_record(report=report(True))
    second = eval_run_record(report=report(False))
    log_in(page, "root", "root-pass-123", next_path="/evals/")
    page.goto("/evals/")
    canvas = page.locator("canvas#chart-release_risk")
    canvas.wait_for()
    points = page.evaluate("() => Chart.getChart('chart-release_risk').data.datasets[0].data")
    assert points == [1.0, 0.0]
    assert page.evaluate("() => Chart.getChart('chart-release_risk').data.labels.length") == 2
    assert canvas.bounding_box()["height"] > 50
    page.get_by_role("link", name=f"#{second.pk}").click()
    assert page.locator("#scenario-high_p95").inner_text().count("failed") >= 1
    assert not page.js_errors
