from __future__ import annotations

import pytest

from casework.fraud.selectors import (
    SIMILAR_MAX_DISTANCE,
    alert_get_for_case,
    feature_distance,
    similar_confirmed_cases,
    similar_confirmed_count,
)
from tests.fraud.conftest import CLEAN, CYCLING

pytestmark = pytest.mark.django_db

SYNTHETIC = {**CLEAN, "kyc_face_match_score": 0.45, "account_age_days": 9, "vpn_usage_pct": 40}


def cycling(account_id, **changes):
    return {**CYCLING, "account_id": account_id, **changes}


def test_it_returns_the_nearest_confirmed_fraud_case_first(alice, make_alert, decide):
    near = make_alert(**cycling("ACC-1", deposits_total=150_000, deposit_withdraw_cycle_days_avg=1.4))
    farther = make_alert(**cycling("ACC-2", deposits_total=90_000, deposit_withdraw_cycle_days_avg=2.6,
                                   deposits_count=25, withdrawals_count=27, withdrawals_total=84_000,
                                   deposits_vs_income_ratio=2.8))
    decide(near, alice)
    decide(farther, alice)
    new = make_alert(**cycling("ACC-3"))
    results = similar_confirmed_cases(new)
    assert [alert.account.account_id for alert, _ in results] == ["ACC-1", "ACC-2"]
    assert results[0][1] < results[1][1] <= SIMILAR_MAX_DISTANCE
    assert similar_confirmed_count(new) == 2


def test_only_confirmed_fraud_counts(alice, make_alert, decide):
    legit = make_alert(**cycling("ACC-1"))
    open_case = make_alert(**cycling("ACC-2"))
    decide(legit, alice, outcome="legit")
    new = make_alert(**cycling("ACC-3"))
    assert similar_confirmed_cases(new) == []
    assert similar_confirmed_count(new) == 0
    assert open_case.case.decisions.count() == 0


def test_a_different_pattern_is_not_similar(alice, make_alert, decide):
    decide(make_alert(**{**SYNTHETIC, "account_id": "ACC-1"}), alice)
    new = make_alert(**cycling("ACC-3"))
    assert similar_confirmed_count(new) == 0


def test_a_case_is_not_similar_to_itself(alice, make_alert, decide):
    alert = make_alert(**cycling("ACC-1"))
    decide(alert, alice)
    assert similar_confirmed_cases(alert) == []


def test_the_limit_keeps_the_nearest(alice, make_alert, decide):
    for i in range(4):
        decide(make_alert(**cycling(f"ACC-{i}", deposit_withdraw_cycle_days_avg=1.3 + i * 0.3)), alice)
    new = make_alert(**cycling("ACC-9"))
    results = similar_confirmed_cases(new, limit=2)
    assert [a.account.account_id for a, _ in results] == ["ACC-0", "ACC-1"]
    assert similar_confirmed_count(new) == 4


def test_distance_compares_money_on_a_log_scale():
    base = {**CLEAN}
    double = {**CLEAN, "deposits_total": CLEAN["deposits_total"] * 2}
    tenfold = {**CLEAN, "deposits_total": CLEAN["deposits_total"] * 10}
    assert feature_distance(base, base) == 0
    assert 0 < feature_distance(base, double) < feature_distance(base, tenfold)


def test_demo_patterns_find_their_own_kind(alice, make_alert, decide):
    from casework.fraud.demo_data import demo_alerts

    alerts = demo_alerts(seed=7)
    by_kind = {}
    for demo in alerts:
        by_kind.setdefault(demo.archetype, []).append(demo.row)
    for row in by_kind["mule_network"][:3]:
        decide(make_alert(**row), alice)
    mule = make_alert(**by_kind["mule_network"][3])
    traveller = make_alert(**by_kind["frequent_traveller"][0])
    assert similar_confirmed_count(mule) >= 2
    assert similar_confirmed_count(traveller) == 0


def test_alert_get_for_case(alice, make_alert):
    from casework.cases.services import case_create

    alert = make_alert()
    assert alert_get_for_case(alert.case) == alert
    assert alert_get_for_case(case_create(actor=alice, case_type="fraud_alert", title="By hand")) is None


def test_similar_patterns_come_from_the_nearest_confirmed_cases(alice, make_alert, decide):
    from casework.fraud.selectors import similar_confirmed_patterns
    from casework.fraud.services import pattern_capture

    decision = decide(make_alert(**cycling("ACC-1")), alice)
    pattern_capture(decision=decision, actor="system", pattern={
        "key_signals": ["fast cycling"], "behavioral_pattern": "Cycling.", "final_outcome": "Confirmed Fraud",
        "one_sentence_description": "A pass-through account."})
    decide(make_alert(**cycling("ACC-2", deposit_withdraw_cycle_days_avg=1.5)), alice)  # no pattern captured
    new = make_alert(**cycling("ACC-3"))
    assert [p.one_sentence_description for p in similar_confirmed_patterns(new)] == ["A pass-through account."]


def test_one_scan_gives_what_the_separate_selectors_give(alice, make_alert, decide):
    from casework.fraud.selectors import similar_confirmed, similar_confirmed_patterns
    from casework.fraud.services import pattern_capture

    decision = decide(make_alert(**cycling("ACC-1")), alice)
    pattern_capture(decision=decision, actor="system", pattern={
        "key_signals": ["fast cycling"], "behavioral_pattern": "Cycling.", "final_outcome": "Confirmed Fraud",
        "one_sentence_description": "A pass-through account."})
    decide(make_alert(**cycling("ACC-2", deposit_withdraw_cycle_days_avg=1.5)), alice)
    decide(make_alert(**{**SYNTHETIC, "account_id": "ACC-9"}), alice)  # confirmed, but not similar
    new = make_alert(**cycling("ACC-3"))
    cases, count, patterns = similar_confirmed(new, limit=5, pattern_limit=3)
    assert [a.account.account_id for a, _ in cases] == ["ACC-1", "ACC-2"]
    assert cases == similar_confirmed_cases(new, limit=5)
    assert count == similar_confirmed_count(new) == 2
    assert patterns == similar_confirmed_patterns(new, limit=3)
    assert [p.one_sentence_description for p in patterns] == ["A pass-through account."]
