"""Fraud test helpers: a valid alert's fields, and alerts made through the service."""

from __future__ import annotations

import pytest

CLEAN = {
    "account_id": "ACC-2001",
    "declared_income_annual": 52000.0,
    "deposits_total": 41000.0,
    "deposits_count": 14,
    "withdrawals_total": 30500.0,
    "withdrawals_count": 35,
    "deposit_withdraw_cycle_days_avg": 19.0,
    "deposits_vs_income_ratio": 0.79,
    "kyc_face_match_score": 0.94,
    "account_age_days": 1200,
    "vpn_usage_pct": 4.0,
    "countries_accessed_count": 2,
    "device_shared_count": 0,
    "ip_shared_count": 1,
}

CYCLING = {
    **CLEAN,
    "account_id": "ACC-1043",
    "declared_income_annual": 32000.0,
    "deposits_total": 148500.0,
    "deposits_count": 41,
    "withdrawals_total": 141200.0,
    "withdrawals_count": 44,
    "deposit_withdraw_cycle_days_avg": 1.3,
    "deposits_vs_income_ratio": 4.64,
    "account_age_days": 96,
}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The named users (and the demo's) get passwords; the default hasher costs ~0.3 s each.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def alert_data(**overrides) -> dict:
    return {**CLEAN, **overrides}


@pytest.fixture
def make_alert(db):
    from casework.fraud.services import alert_create

    def make(actor="system", **overrides):
        return alert_create(actor=actor, data=alert_data(**overrides))

    return make


@pytest.fixture
def decide(db):
    """Close an alert's case with an outcome (default confirmed fraud)."""
    from casework.cases.services import case_close

    def close(alert, actor, outcome="confirmed_fraud", reason="Checked with the bank."):
        return case_close(actor=actor, case=alert.case, outcome=outcome, reason=reason)

    return close
