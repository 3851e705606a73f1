"""The built-in scorer: one benign signal never makes an alert high risk; combinations do."""

from __future__ import annotations

import pytest

from casework.fraud.demo_data import FRAUD_ARCHETYPES, demo_alerts
from casework.fraud.scoring import SINGLE_SIGNAL_CAP, assess, risk_level_for
from tests.fraud.conftest import CLEAN, CYCLING

HARD_NEGATIVES = {
    "frequent traveller": {"countries_accessed_count": 18, "vpn_usage_pct": 8},
    "household sharing a device and IP": {"device_shared_count": 2, "ip_shared_count": 3},
    "high earner with big deposits": {"declared_income_annual": 640_000, "deposits_total": 810_000,
                                      "deposits_vs_income_ratio": 1.27, "withdrawals_total": 590_000,
                                      "deposit_withdraw_cycle_days_avg": 21},
    "privacy-minded VPN user": {"vpn_usage_pct": 100, "countries_accessed_count": 2},
    "brand-new honest customer": {"account_age_days": 2, "deposits_count": 1, "withdrawals_count": 0,
                                  "deposits_total": 1500, "withdrawals_total": 0, "deposits_vs_income_ratio": 0.03},
    "one-off bonus": {"deposits_total": 160_000, "deposits_vs_income_ratio": 3.1},
    "old account, poor selfie": {"kyc_face_match_score": 0.42},
}

FRAUD = {
    "deposit-withdraw cycling": CYCLING,
    "synthetic identity": {**CLEAN, "kyc_face_match_score": 0.5, "account_age_days": 10},
    "mule network": {**CLEAN, "device_shared_count": 7, "ip_shared_count": 9, "deposit_withdraw_cycle_days_avg": 3,
                     "withdrawals_total": 39_000},
    "VPN hopping": {**CLEAN, "vpn_usage_pct": 88, "countries_accessed_count": 14},
}


@pytest.mark.parametrize("name", HARD_NEGATIVES)
def test_a_single_benign_signal_is_never_high_risk(name):
    result = assess({**CLEAN, **HARD_NEGATIVES[name]})
    assert result.risk_level in ("low", "medium"), result.one_line_explanation
    assert result.fraud_probability <= SINGLE_SIGNAL_CAP


@pytest.mark.parametrize("name", ["frequent traveller", "household sharing a device and IP",
                                  "high earner with big deposits", "privacy-minded VPN user",
                                  "brand-new honest customer"])
def test_the_classic_hard_negatives_stay_low(name):
    assert assess({**CLEAN, **HARD_NEGATIVES[name]}).risk_level == "low"


@pytest.mark.parametrize(("name", "pattern"), [
    ("deposit-withdraw cycling", "cycling_beyond_means"),
    ("synthetic identity", "synthetic_identity"),
    ("mule network", "mule_network"),
    ("VPN hopping", "vpn_hopping"),
])
def test_combinations_make_an_alert_high_or_critical(name, pattern):
    result = assess(FRAUD[name])
    assert result.risk_level in ("high", "critical")
    assert result.corroborated
    assert pattern in [f.name for f in result.factors if f.fired]


def test_a_clean_account_has_no_risk_factors():
    result = assess(CLEAN)
    assert result.risk_level == "low"
    assert result.risk_factors == []
    assert result.pattern_label == "no strong signal"
    assert "No risk factor stands out" in result.one_line_explanation


def test_it_explains_itself_with_the_alerts_own_numbers():
    result = assess(CYCLING)
    assert result.pattern_label == "deposit-withdraw cycling"
    assert "1.3 days" in result.one_line_explanation
    assert any("4.6x the declared annual income of 32,000" in f for f in result.risk_factors)
    breakdown = {f.name: f.as_dict() for f in result.factors}
    assert breakdown["fast_cycling"]["fired"] is True
    assert breakdown["shared_device"]["contribution"] == 0


def test_a_single_signal_says_it_is_not_enough():
    result = assess({**CLEAN, **HARD_NEGATIVES["frequent traveller"]})
    assert "single signal is not enough" in result.one_line_explanation
    assert result.anomaly_score == 1.0  # unusual, but not risky


def test_it_is_deterministic():
    assert assess(CYCLING) == assess(dict(CYCLING))


@pytest.mark.parametrize(("probability", "level"), [(0.0, "low"), (0.29, "low"), (0.3, "medium"),
                                                     (0.6, "high"), (0.79, "high"), (0.8, "critical")])
def test_risk_level_thresholds(probability, level):
    assert risk_level_for(probability) == level


def test_it_separates_fraud_from_legitimate_accounts_across_demo_populations():
    """Ten populations the weights were not checked against (seeds other than the demo's)."""
    fraud_high = fraud_total = legit_high = legit_total = 0
    for seed in range(100, 110):
        for demo in demo_alerts(seed):
            high = assess(demo.row).risk_level in ("high", "critical")
            if demo.archetype in FRAUD_ARCHETYPES:
                fraud_total += 1
                fraud_high += high
            else:
                legit_total += 1
                legit_high += high
    assert fraud_high / fraud_total >= 0.95
    assert legit_high == 0


def test_a_zero_deposit_account_does_not_divide_by_zero():
    result = assess({**CLEAN, "deposits_total": 0, "withdrawals_total": 0, "deposits_count": 0})
    assert result.risk_level == "low"
