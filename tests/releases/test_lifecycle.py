"""The release assessment's declared lifecycle (casework/releases/states.py), and issue 22's
guard: a release with failing critical tests, or metrics past the high thresholds, is never
filed low or medium, whatever the model says. The model here is the fake OpenAI server
(tests/fakes) scripted to file such a release low."""

from __future__ import annotations

import pytest

from agents.models import AgentRun
from audit.models import AuditEntry
from casework.cases.services import case_close
from tests.fakes.fixtures import fake_openai  # noqa: F401 - fixture
from tests.fakes.llm_servers import tool_calls
from tests.releases.conftest import LOW, SEED, release, submit, t
from tests.releases.fake_model import conversation, play_detective

pytestmark = pytest.mark.django_db(transaction=True)


def files_low(body: dict):
    """A detective that reads both tools and then files everything low, whatever it read."""
    data, results = conversation(body)
    if not results:
        return tool_calls(("get_release_summary", {"release_id": data["release_id"]}))
    if len(results) == 1:
        return tool_calls(("get_test_details", {"release_id": data["release_id"]}))
    return tool_calls(("file_risk_report", {"release_id": data["release_id"], "severity": "low",
                                            "findings": ["All good: ship it."]}))


@pytest.fixture
def lenient_model(fake_openai):  # noqa: F811 - the fixture imported above
    fake_openai.handler = files_low
    return fake_openai


def moves(rel) -> list[tuple[str, str, str]]:
    return [(e.data["from"], e.data["to"], e.data["by"])
            for e in AuditEntry.objects.filter(case_id=rel.case_id, action="release.status_changed").order_by("id")]


# --- The guard --------------------------------------------------------------------------------


def test_a_model_filing_failing_critical_tests_low_is_overridden_to_high_and_the_page_says_why(
        lenient_model, alice_client):
    rel, run = submit(SEED)  # test_refund_flow failed, critical, in payments

    report = rel.reports.get()
    # Before issue 22 the model's low stood.
    assert (report.adjusted_from, report.severity) == ("low", "high")
    assert "Failed test test_refund_flow (payments, critical): refund total 0.00 != 19.99" in report.adjusted_reason
    assert report.findings[-1].startswith("Severity raised from low to high: Failed test test_refund_flow")
    guarded = AuditEntry.objects.get(case_id=rel.case_id, action="release.severity_guarded")
    assert guarded.data["filed"] == "low" and guarded.data["applied"] == "high"
    rel.case.refresh_from_db()
    assert rel.case.priority == "high"
    page = alice_client.get(f"/cases/{rel.case.reference}/").content.decode()
    assert 'id="release-severity-override"' in page and "Filed as low; raised to high by code:" in page


@pytest.mark.parametrize("metrics, why", [
    ({"error_rate": 0.07, "response_time_p95": 200}, "Error rate 7.00% is at or above the high threshold 5.00%"),
    ({"error_rate": 0.001, "response_time_p95": 1500}, "p95 response time 1500 ms is at or above the high threshold"),
])
def test_metrics_past_the_high_thresholds_are_never_filed_low(lenient_model, metrics, why):
    rel, _ = submit(release(LOW, deployment_metrics=metrics))
    report = rel.reports.get()
    assert (report.adjusted_from, report.severity) == ("low", "high")
    assert why in report.adjusted_reason


def test_the_thresholds_are_the_settings(lenient_model, settings):
    settings.RELEASE_ERROR_RATE_HIGH = 0.10
    rel, _ = submit(release(LOW, deployment_metrics={"error_rate": 0.07, "response_time_p95": 200}))
    # Below the (moved) high threshold, still past the medium one: raised to medium (issue 43).
    report = rel.reports.get()
    assert (report.adjusted_from, report.severity) == ("low", "medium")
    assert "Error rate 7.00% is elevated" in report.adjusted_reason


def test_a_failed_test_in_a_critical_area_counts_as_critical(lenient_model):
    rel, _ = submit(release(LOW, tests={"passed": 10, "failed": 1, "skipped": 0},
                            test_details=[t("test_login_lockout", "auth", "failed", False, "locked out")]))
    assert rel.reports.get().severity == "high"


def test_a_clean_release_filed_low_stays_low(lenient_model):
    rel, _ = submit(LOW)
    report = rel.reports.get()
    assert (report.severity, report.adjusted_from) == ("low", "")
    assert not AuditEntry.objects.filter(case_id=rel.case_id, action="release.severity_guarded").exists()


def test_a_risky_change_with_a_failing_test_and_degraded_metrics_is_never_filed_low(lenient_model):
    """Issue 43, seed 004's "high": a payment change shipping with a failing (non-critical) test,
    3% errors and a p95 of 450 ms; the offline rules call it high, and the model's low stood."""
    rel, _ = submit(release(LOW, changes=["Added payment processing"], tests={"passed": 9, "failed": 1, "skipped": 0},
                            deployment_metrics={"error_rate": 0.03, "response_time_p95": 450},
                            test_details=[t("test_tooltip_position", "ui", "failed", False, "off by 2 px")]))
    report = rel.reports.get()
    assert (report.adjusted_from, report.severity) == ("low", "high")
    assert "'Added payment processing' (payment) ships with failing tests" in report.adjusted_reason
    guarded = AuditEntry.objects.get(case_id=rel.case_id, action="release.severity_guarded")
    assert (guarded.data["filed"], guarded.data["applied"]) == ("low", "high")


@pytest.mark.parametrize("changes, why", [
    ({"tests": {"passed": 9, "failed": 1, "skipped": 0},
      "test_details": [t("test_tooltip_position", "ui", "failed", False, "off by 2 px")]},
     "Failed test test_tooltip_position (ui): off by 2 px"),
    ({"deployment_metrics": {"error_rate": 0.002, "response_time_p95": 450}},
     "p95 response time 450 ms is degraded"),
    ({"deployment_metrics": {"error_rate": 0.02, "response_time_p95": 200}}, "Error rate 2.00% is elevated"),
], ids=["minor-failure", "slow-p95", "elevated-errors"])
def test_a_low_report_with_a_minor_failure_or_degraded_metrics_is_raised_to_medium(lenient_model, changes, why):
    """Issue 43, seed 004's "medium": minor test failures, slight metric degradation."""
    rel, _ = submit(release(LOW, **changes))
    report = rel.reports.get()
    assert (report.adjusted_from, report.severity) == ("low", "medium")
    assert why in report.adjusted_reason


def test_a_low_report_never_lowers_the_case_priority(lenient_model):
    """Issue 43: the detective's low took the case from medium to low without a person."""
    rel, _ = submit(LOW)
    rel.case.refresh_from_db()
    assert rel.reports.get().severity == "low" and rel.case.priority == "medium"


def test_a_report_keeps_the_priority_a_person_set(lenient_model, alice):
    from agents.runtime.pipeline import execute_run
    from casework.cases.services import case_set_priority
    from casework.releases.services import release_reassess

    rel, _ = submit(SEED)
    rel.case.refresh_from_db()
    assert rel.case.priority == "high"
    case_set_priority(actor=alice, case=rel.case, priority="medium", reason="Hotfix behind a feature flag.")
    execute_run(release_reassess(actor=alice, release=rel).pk)
    rel.case.refresh_from_db()
    assert rel.reports.count() == 2 and rel.case.priority == "medium"
    kept = AuditEntry.objects.get(case_id=rel.case_id, action="release.priority_kept")
    assert kept.data["person"] == "alice" and kept.data["severity"] == "high"


# --- The lifecycle ------------------------------------------------------------------------------


def test_received_assessed_filed_then_decided_by_the_release_manager(fake_openai, rita):  # noqa: F811
    from casework.releases.services import release_decide

    fake_openai.handler = play_detective
    rel, _ = submit(LOW)
    rel.refresh_from_db()
    assert (rel.assessment, rel.case.status) == ("filed", "awaiting_decision")
    release_decide(actor=rita, release=rel, outcome="go", reason="Clean.")
    rel.refresh_from_db()
    assert (rel.assessment, rel.case.status) == ("decided", "closed")
    assert moves(rel) == [("received", "pending", "system"), ("pending", "filed", "agent"),
                          ("filed", "decided", "person")]


def test_a_generic_close_makes_the_release_decided_too(fake_openai, rita):  # noqa: F811
    fake_openai.handler = play_detective
    rel, _ = submit(LOW)
    case_close(actor=rita, case=rel.case, outcome="deferred", reason="After the freeze.")
    rel.refresh_from_db()
    assert rel.assessment == "decided"


def test_a_run_that_fails_while_filing_says_the_assessment_failed(fake_openai, monkeypatch):  # noqa: F811
    import casework.releases.services as services

    def broken(**kwargs):
        raise RuntimeError("database went away")

    fake_openai.handler = play_detective
    monkeypatch.setattr(services, "case_set_priority", broken)
    rel, run = submit(SEED)  # a high report raises the case's priority (a low one leaves it: issue 43)
    assert run.status == AgentRun.Status.FAILED
    rel.refresh_from_db()
    # Before issue 22 it read "Being assessed" for good.
    assert rel.assessment == "failed" and "database went away" in rel.assessment_error
    assert not rel.reports.exists()  # the filing rolled back whole


def test_assess_again_is_a_persons_move_and_refused_once_decided(fake_openai, alice, rita):  # noqa: F811
    from casework.errors import Conflict
    from casework.releases.services import release_decide, release_reassess

    fake_openai.handler = play_detective
    rel, _ = submit(LOW)
    release_reassess(actor=alice, release=rel)
    assert AuditEntry.objects.get(case_id=rel.case_id, action="release.status_changed", data__from="filed",
                                  data__to="pending").actor == "alice"
    rel.refresh_from_db()
    assert rel.assessment == "filed" and rel.reports.count() == 2  # the new run filed again
    release_decide(actor=rita, release=rel, outcome="go", reason="Clean.")
    with pytest.raises(Conflict):
        release_reassess(actor=alice, release=rel)


def test_the_migration_fills_received_and_decided_for_existing_releases(fake_openai, rita):  # noqa: F811
    import importlib

    from django.apps import apps

    from casework.releases.models import Release, RiskReport
    from casework.releases.services import release_decide

    migration = importlib.import_module("casework.releases.migrations.0002_assessment_lifecycle")
    fake_openai.handler = play_detective
    filed, _ = submit(LOW)
    decided, _ = submit(release(LOW, release_id="rel-9-9-9"))
    release_decide(actor=rita, release=decided, outcome="go", reason="Clean.")
    fresh, _ = submit(release(LOW, release_id="rel-9-9-8"))
    # As the rows stood before: decided ones "filed", an untouched one "pending", a raised report without why.
    Release.objects.filter(pk=decided.pk).update(assessment="filed")
    Release.objects.filter(pk=fresh.pk).update(assessment="pending")
    fresh.case.__class__.objects.filter(pk=fresh.case_id).update(status="new")
    RiskReport.objects.filter(release=filed).update(adjusted_from="low", adjusted_reason="")

    migration.fill(apps, None)
    assert dict(Release.objects.values_list("pk", "assessment")) == {
        filed.pk: "filed", decided.pk: "decided", fresh.pk: "received"}
    assert RiskReport.objects.get(release=filed).adjusted_reason == "the report was filed without all its data"
