from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from audit.models import AuditEntry
from casework.cases.models import Case
from casework.cases.services import case_close
from casework.errors import Conflict
from casework.fraud.models import Account, Alert, KnowledgePattern
from casework.fraud.services import (
    alert_apply_assessment,
    alert_create,
    alerts_create_bulk,
    pattern_capture,
    priority_from_text,
)
from tests.fraud.conftest import CYCLING, alert_data

pytestmark = pytest.mark.django_db


def test_an_alert_opens_a_fraud_case_named_for_its_pattern(alice):
    alert = alert_create(actor=alice, data=CYCLING)
    case = alert.case
    assert case.case_type == "fraud_alert"
    assert case.reference.startswith("FRA-")
    assert case.title == "Account ACC-1043: deposit-withdraw cycling"
    assert case.priority == "critical"
    assert case.record == alert  # Case.record finds the alert through record_attr
    assert alert.account.account_id == "ACC-1043"
    assert alert.score_source == "casework_scorer"
    assert alert.risk_level == "critical"
    assert 0.8 <= alert.fraud_probability <= 1
    assert any("1.3 days" in factor for factor in alert.risk_factors)
    assert case.description == alert.one_line_explanation


def test_creation_is_audited_with_the_channel_and_features(alice):
    alert = alert_create(actor=alice, data=CYCLING, via="csv_upload")
    entry = AuditEntry.objects.get(action="fraud.alert_created")
    assert entry.case_id == alert.case_id
    assert entry.actor == "alice"
    assert entry.data["via"] == "csv_upload"
    assert entry.data["features"]["deposits_count"] == 41
    assert AuditEntry.objects.filter(action="case.created", case_id=alert.case_id).exists()


def test_it_queues_the_fraud_pipeline_and_starts_it_only_after_commit(alice, django_capture_on_commit_callbacks):
    from agents.models import AgentRun

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        alert = alert_create(actor=alice, data=CYCLING)
    run = AgentRun.objects.get(case=alert.case)
    assert (run.pipeline, run.mode, run.status) == ("fraud", "alert_creation", "queued")
    assert len(callbacks) == 1  # the task, waiting for the commit
    callbacks[0]()
    run.refresh_from_db()
    assert run.status == "completed"


def test_upstream_scores_are_kept_and_missing_ones_filled(alice):
    alert = alert_create(actor=alice, data=alert_data(fraud_probability=0.91, risk_factors=["Model says so"]))
    assert alert.score_source == "upstream"
    assert alert.fraud_probability == 0.91
    assert alert.risk_factors == ["Model says so"]
    # Upstream's probability sets the level; the scorer fills the rest.
    assert alert.risk_level == "critical"
    assert alert.case.priority == "critical"
    assert set(alert.scorer_filled) == {"anomaly_score", "risk_level", "one_line_explanation"}


def test_an_upstream_alert_our_rules_do_not_explain_is_titled_as_upstreams(alice):
    alert = alert_create(actor=alice, data=alert_data(risk_level="high"))
    assert alert.case.title == "Account ACC-2001: flagged by the upstream model (high risk)"
    assert alert.case.priority == "high"


def test_an_unknown_field_is_refused_by_name(alice):
    with pytest.raises(ValidationError) as exc:
        alert_create(actor=alice, data=alert_data(colour="red"))
    assert "colour" in exc.value.message_dict
    assert "Unknown field" in exc.value.message_dict["colour"][0]
    assert not Case.objects.exists()


@pytest.mark.parametrize(("field", "value", "words"), [
    ("vpn_usage_pct", 140, "between 0 and 100"),
    ("kyc_face_match_score", 1.2, "between 0 and 1"),
    ("deposits_count", -1, "0 or more"),
    ("deposits_total", -5.0, "0 or more"),
    ("fraud_probability", 1.5, "between 0 and 1"),
    ("risk_level", "severe", "one of low, medium, high, critical"),
    ("account_age_days", "soon", "whole number"),
    ("deposits_total", float("nan"), "finite"),
])
def test_out_of_range_values_are_refused_naming_the_field(alice, field, value, words):
    with pytest.raises(ValidationError) as exc:
        alert_create(actor=alice, data=alert_data(**{field: value}))
    assert words in exc.value.message_dict[field][0]
    assert not Alert.objects.exists()


def test_a_missing_feature_is_refused_by_name(alice):
    data = alert_data()
    del data["ip_shared_count"]
    with pytest.raises(ValidationError) as exc:
        alert_create(actor=alice, data=data)
    assert exc.value.message_dict == {"ip_shared_count": ["This field is required."]}


def test_the_database_refuses_an_out_of_range_alert_too(alice):
    alert = alert_create(actor=alice, data=CYCLING)
    with pytest.raises(IntegrityError), transaction.atomic():
        Alert.objects.filter(pk=alert.pk).update(vpn_usage_pct=101)


def test_bulk_creates_every_row_and_reuses_accounts(alice):
    alerts = alerts_create_bulk(actor=alice, rows=[CYCLING, alert_data(), alert_data(account_id="ACC-1043")])
    assert len(alerts) == 3
    assert Account.objects.count() == 2
    assert Account.objects.get(account_id="ACC-1043").alerts.count() == 2


def test_bulk_is_all_or_nothing_and_names_row_and_field(alice):
    rows = [CYCLING, alert_data(vpn_usage_pct=140), alert_data(), alert_data(deposits_count=-2, extra=1)]
    with pytest.raises(ValidationError) as exc:
        alerts_create_bulk(actor=alice, rows=rows)
    errors = exc.value.message_dict
    assert set(errors) == {"__all__", "row 2: vpn_usage_pct", "row 4: deposits_count", "row 4: extra"}
    assert "2 of 4 rows are invalid" in errors["__all__"][0]
    assert "numbered from 1" in errors["__all__"][0]
    assert not Case.objects.exists()
    assert not Account.objects.exists()


def test_bulk_refuses_a_row_that_is_not_an_object(alice):
    with pytest.raises(ValidationError) as exc:
        alerts_create_bulk(actor=alice, rows=[CYCLING, "ACC-1"])
    assert "row 2" in exc.value.message_dict


def test_bulk_refuses_an_empty_batch(alice):
    with pytest.raises(ValidationError):
        alerts_create_bulk(actor=alice, rows=[])


@pytest.mark.parametrize(("text", "priority"), [
    ("High", "high"),
    ("critical", "critical"),
    ("P1 - urgent", "critical"),
    ("Medium priority", "medium"),
    ("Low, not urgent", "low"),
    ("Moderate", "medium"),
    ("review when possible", None),
    ("", None),
    (None, None),
])
def test_priority_text_maps_to_a_case_priority(text, priority):
    assert priority_from_text(text) == priority


def _assessing(alert):
    from casework.fraud.services import alert_assessment_started

    assert alert_assessment_started(alert=alert, mode="alert_creation")
    return alert


def _run_with_a_finished_specialist(alert):
    """The alert's assessment run, one specialist's findings saved: the fact "Assessed" rests on (issue 43)."""
    run = alert.case.agent_runs.latest("id")
    run.state = {**run.state, "results": {"transaction": {"output": {"anomaly_score": 0.9}}}}
    run.save(update_fields=["state"])
    return run


def test_an_assessment_sets_the_priority_and_is_audited(alice, make_alert):
    alert = _assessing(make_alert())
    assert alert.case.priority == "low"
    applied = alert_apply_assessment(alert=alert, orchestrator={"priority": "High", "risk_level": "high"},
                                     actor="agent:orchestrator", run=_run_with_a_finished_specialist(alert))
    assert applied.priority == "high" and not applied.override
    alert.case.refresh_from_db()
    alert.refresh_from_db()
    assert alert.case.priority == "high"
    assert alert.status == "assessed" and alert.case.status == "awaiting_decision"
    entry = AuditEntry.objects.get(action="case.priority_changed")
    assert entry.actor == "agent:orchestrator"
    assert entry.data["from"] == "low" and entry.data["to"] == "high"


def test_an_assessment_falls_back_to_the_risk_level(make_alert):
    alert = _assessing(make_alert())
    applied = alert_apply_assessment(alert=alert, orchestrator={"priority": "asap?", "risk_level": "Medium"},
                                     actor="agent:orchestrator", run=_run_with_a_finished_specialist(alert))
    assert applied.priority == "medium"


def test_a_failed_or_missing_assessment_keeps_the_priority_and_says_the_assessment_failed(make_alert):
    for orchestrator in (None, {"_error": "rate limit", "priority": "high"}):
        alert = _assessing(make_alert())
        assert alert_apply_assessment(alert=alert, orchestrator=orchestrator, actor="system") is None
        alert.refresh_from_db()
        assert alert.status == "assessment_failed" and alert.case.status == "in_progress"
        assert alert.case.priority == "low"
    assert not AuditEntry.objects.filter(action="case.priority_changed").exists()


def test_an_assessment_leaves_a_closed_case_alone(alice, make_alert, decide):
    alert = make_alert()
    decide(alert, alice, outcome="legit")
    assert alert_apply_assessment(alert=alert, orchestrator={"priority": "critical"}, actor="system") is None


def test_case_set_priority_refuses_a_closed_case(alice, make_alert, decide):
    from casework.cases.services import case_set_priority

    alert = make_alert()
    decide(alert, alice)
    with pytest.raises(Conflict):
        case_set_priority(actor=alice, case=alert.case, priority="high")


PATTERN = {
    "key_signals": ["fast cycling", "deposits 4x income"],
    "behavioral_pattern": "Deposit-withdraw cycling through a low-income account.",
    "final_outcome": "Confirmed Fraud",
    "one_sentence_description": "A pass-through account for money far beyond its income.",
}


def test_a_captured_pattern_is_stored_and_copied_to_the_decision(alice, make_alert, decide):
    decision = decide(make_alert(**{k: v for k, v in CYCLING.items()}), alice)
    knowledge = pattern_capture(decision=decision, pattern={**PATTERN, "model": "offline"}, actor="agent:knowledge")
    assert knowledge.account.account_id == "ACC-1043"
    assert knowledge.case_id == decision.case_id
    decision.refresh_from_db()
    assert decision.data["knowledge_pattern"] == PATTERN
    assert AuditEntry.objects.filter(action="fraud.pattern_captured", case_id=decision.case_id).exists()


def test_capturing_again_updates_the_pattern(alice, make_alert, decide):
    decision = decide(make_alert(), alice, outcome="false_positive")
    pattern_capture(decision=decision, pattern=PATTERN, actor="system")
    pattern_capture(decision=decision, pattern={**PATTERN, "final_outcome": "False Positive"}, actor="system")
    assert KnowledgePattern.objects.get().final_outcome == "False Positive"
    decision.refresh_from_db()
    assert decision.data["knowledge_pattern"]["final_outcome"] == "False Positive"
    assert AuditEntry.objects.filter(action="fraud.pattern_updated").count() == 1


def test_a_pattern_without_a_description_is_refused(alice, make_alert, decide):
    decision = decide(make_alert(), alice)
    with pytest.raises(ValidationError) as exc:
        pattern_capture(decision=decision, pattern={**PATTERN, "one_sentence_description": " "}, actor="system")
    assert "one_sentence_description" in exc.value.message_dict
    assert not KnowledgePattern.objects.exists()


def test_a_failed_capture_is_not_stored(alice, make_alert, decide):
    decision = decide(make_alert(), alice)
    with pytest.raises(ValidationError):
        pattern_capture(decision=decision, pattern={"_error": "timeout"}, actor="system")


def test_patterns_are_for_fraud_cases_only(alice):
    from casework.cases.services import case_create

    case = case_create(actor=alice, case_type="support_ticket", title="Refund")
    decision = case_close(actor=alice, case=case, outcome="replied", reason="Answered.")
    with pytest.raises(ValidationError) as exc:
        pattern_capture(decision=decision, pattern=PATTERN, actor="system")
    assert "decision" in exc.value.message_dict
