from __future__ import annotations

import pytest

from casework.cases.demo import DEMO_LOADERS
from casework.cases.models import Case, Decision
from casework.fraud.demo import demo_load_fraud
from casework.fraud.demo_data import FRAUD_ARCHETYPES, demo_alerts
from casework.fraud.models import Alert, KnowledgePattern
from casework.fraud.selectors import similar_confirmed_count

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_load(alice):
    # The fraud loader alone: seed_demo's other case types have their own tests.
    return lambda: demo_load_fraud(users={"alice": alice})


def test_seed_demo_uses_the_fraud_loader():
    # ... so the generic demo fraud cases of casework/cases/demo.py are not made.
    assert DEMO_LOADERS["fraud_alert"] is demo_load_fraud


def test_the_demo_loads_fifty_alerts_with_decided_history_once(demo_load):
    assert demo_load() == 50
    assert Alert.objects.count() == len(demo_alerts()) == 50
    assert Case.objects.filter(case_type="fraud_alert").count() == 50
    decisions = Decision.objects.filter(case__case_type="fraud_alert")
    assert decisions.count() == 10
    assert decisions.filter(outcome="confirmed_fraud").count() == 7
    assert KnowledgePattern.objects.count() == 10
    assert all("knowledge_pattern" in d.data for d in decisions)

    assert demo_load() == 0  # idempotent
    assert Alert.objects.count() == 50


def test_demo_fraud_is_prioritised_above_legitimate_accounts(demo_load):
    demo_load()
    kinds = {d.row["account_id"]: d.archetype for d in demo_alerts()}
    for alert in Alert.objects.select_related("case", "account"):
        if kinds[alert.account.account_id] in FRAUD_ARCHETYPES:
            assert alert.case.priority in ("high", "critical"), alert.case.title
        else:
            assert alert.case.priority in ("low", "medium"), alert.case.title


def test_open_demo_fraud_has_similar_confirmed_cases(demo_load):
    demo_load()
    kinds = {d.row["account_id"]: d.archetype for d in demo_alerts()}
    open_mules = [a for a in Alert.objects.filter(case__closed_at__isnull=True).select_related("account")
                  if kinds[a.account.account_id] == "mule_network"]
    assert open_mules and all(similar_confirmed_count(a) >= 1 for a in open_mules)
