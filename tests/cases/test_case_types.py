"""A case type is offered only when its pipeline exists (issue 13, "No placeholder cases"):
the demo loads no cases of a type still being built, and the queue's type filter does not
offer it. Derived from the registered pipelines, not a hard-coded list."""

from __future__ import annotations

import pytest

from agents.runtime import pipeline as runtime
from casework.cases import demo
from casework.cases.models import Case
from casework.cases.types import CASE_TYPES, case_types_available

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
