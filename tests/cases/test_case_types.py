"""A case type is offered only when its pipeline exists (issue 13, "No placeholder cases"):
the demo loads no cases of a type still being built, and the queue's type filter does not
offer it. Derived from the registered pipelines, not a hard-coded list."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.runtime import pipeline as runtime
from casework.cases import demo
from casework.cases.checks import case_sla_check
from casework.cases.models import Case
from casework.cases.services import case_create
from casework.cases.types import CASE_TYPES, CaseType, case_type_register, case_types_available

pytestmark = pytest.mark.django_db


@pytest.fixture
def without_releases(monkeypatch):
    monkeypatch.delitem(runtime.PIPELINES, "releases", raising=False)


def test_available_types_follow_the_registered_pipelines(monkeypatch, without_releases):
    keys = [ct.key for ct in case_types_available()]
    assert keys == ["fraud_alert", "support_ticket", "access_change", "transaction_investigation"]
    monkeypatch.setitem(runtime.PIPELINES, "releases", object())
    assert "release_risk" in [ct.key for ct in case_types_available()]
    assert all(ct.pipeline for ct in CASE_TYPES.values())


def test_the_demo_loads_no_cases_of_a_type_without_its_pipeline(monkeypatch, without_releases):
    called = []
    for key in CASE_TYPES:
        monkeypatch.setitem(demo.DEMO_LOADERS, key, lambda *, users, key=key: called.append(key) or 0)
    demo.demo_load()
    assert called == ["fraud_alert", "support_ticket", "access_change", "transaction_investigation"]
    assert not Case.objects.exists()  # no placeholder cases of any type


def test_the_queue_type_filter_offers_only_types_whose_pipeline_exists(alice_client, monkeypatch, without_releases):
    html = alice_client.get("/cases/").content.decode()
    assert 'value="fraud_alert"' in html and 'value="support_ticket"' in html
    assert 'value="release_risk"' not in html
    monkeypatch.setitem(runtime.PIPELINES, "releases", object())
    assert 'value="release_risk"' in alice_client.get("/cases/").content.decode()


def test_each_type_registers_itself_in_installed_apps_order():
    # The table that listed the five types is gone: each package adds its own row from ready().
    assert list(CASE_TYPES) == ["fraud_alert", "support_ticket", "access_change", "transaction_investigation",
                                "release_risk"]
    assert [c[0] for c in Case._meta.get_field("case_type").choices] == list(CASE_TYPES)


def test_a_second_registration_keeps_the_first_and_a_taken_prefix_is_refused():
    fraud = CASE_TYPES["fraud_alert"]
    assert case_type_register(CaseType("fraud_alert", "Other", "OTH", ())) is fraud
    with pytest.raises(ValueError, match="prefix 'FRA' is 'fraud_alert'"):
        case_type_register(CaseType("other_alert", "Other alert", "FRA", ()))
    assert "other_alert" not in CASE_TYPES


def test_an_unregistered_type_is_refused_by_the_service(alice):
    with pytest.raises(ValidationError, match="Unknown case type"):
        case_create(actor=alice, case_type="warranty_claim", title="No such type")


def test_a_case_sla_naming_an_unknown_type_fails_the_system_check(settings):
    settings.CASE_SLA = {**settings.CASE_SLA, "fraud_alrt": {"critical": 2.0}}
    errors = case_sla_check()
    assert [e.id for e in errors] == ["cases.E001"]
    assert "'fraud_alrt:critical=2' names an unknown case type 'fraud_alrt'" in errors[0].msg
    assert "fraud_alert" in errors[0].hint
    settings.CASE_SLA = {k: v for k, v in settings.CASE_SLA.items() if k != "fraud_alrt"}
    assert case_sla_check() == []
