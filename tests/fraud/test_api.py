from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from casework.fraud.models import Alert
from tests.fraud.conftest import CLEAN, CYCLING

pytestmark = pytest.mark.django_db

URL = "/api/fraud/alerts/"


def test_it_creates_one_alert(api):
    response = api.post(URL, CYCLING, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["reference"] == "FRA-000001"
    assert body["priority"] == "critical"
    assert body["account_id"] == "ACC-1043"
    assert body["features"]["deposit_withdraw_cycle_days_avg"] == 1.3
    assert body["score_source"] == "casework_scorer"
    assert body["risk_factors"]


def test_it_creates_a_batch_in_order(api):
    response = api.post(URL, [CYCLING, CLEAN], format="json")
    assert response.status_code == 201
    assert [a["account_id"] for a in response.json()] == ["ACC-1043", "ACC-2001"]


def test_a_bad_field_is_a_400_naming_it(api):
    response = api.post(URL, {**CLEAN, "vpn_usage_pct": 101, "shoe_size": 44}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["vpn_usage_pct"] == ["Must be between 0 and 100; got 101."]
    assert body["shoe_size"][0].startswith("Unknown field.")
    assert not Alert.objects.exists()


def test_a_bad_batch_creates_nothing_and_names_row_and_field(api):
    response = api.post(URL, [CLEAN, CYCLING, {**CLEAN, "kyc_face_match_score": -0.1}], format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["row 3: kyc_face_match_score"] == ["Must be between 0 and 1; got -0.1."]
    assert "Nothing was created: 1 of 3 rows are invalid" in body["non_field_errors"][0]
    assert not Alert.objects.exists()


def test_a_body_that_is_neither_object_nor_list_is_refused(api):
    response = api.post(URL, "42", content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["Send an alert object or a list of them."]}


def test_an_empty_batch_is_refused(api):
    response = api.post(URL, [], format="json")
    assert response.status_code == 400


def test_it_reads_an_alert_by_case_reference(api):
    reference = api.post(URL, CYCLING, format="json").json()["reference"]
    response = api.get(f"{URL}{reference.lower()}/")
    assert response.status_code == 200
    body = response.json()
    assert body["reference"] == reference
    assert body["title"] == "Account ACC-1043: deposit-withdraw cycling"
    assert body["features"]["deposits_count"] == 41
    assert body["similar_confirmed_cases_count"] == 0
    assert set(body) >= {"fraud_probability", "anomaly_score", "risk_level", "one_line_explanation", "risk_factors"}


def test_reading_an_unknown_case_is_404(api):
    assert api.get(f"{URL}FRA-999999/").status_code == 404


def test_a_case_without_an_alert_is_404(api, alice):
    from casework.cases.services import case_create

    case = case_create(actor=alice, case_type="fraud_alert", title="By hand")
    assert api.get(f"{URL}{case.reference}/").status_code == 404


def test_managers_and_strangers_are_refused(mona):
    client = APIClient()
    assert client.post(URL, CLEAN, format="json").status_code in (401, 403)
    client.force_authenticate(mona)
    assert client.post(URL, CLEAN, format="json").status_code == 403
    assert not Alert.objects.exists()


def test_the_openapi_schema_documents_single_and_bulk_requests(api):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    operation = schema["paths"]["/api/fraud/alerts/"]["post"]
    body = operation["requestBody"]["content"]["application/json"]
    def resolve(node: dict) -> dict:  # one alert is a shared component, referenced by both variants
        ref = node.get("$ref", "")
        return schema["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else node

    variants = body["schema"]["oneOf"]
    single, batch = resolve(variants[0]), variants[1]
    assert "vpn_usage_pct" in single["properties"]
    assert batch["type"] == "array" and resolve(batch["items"]) == single
    assert single["properties"]["vpn_usage_pct"]["maximum"] == 100
    assert "examples" in body
    assert "/api/fraud/alerts/{reference}/" in schema["paths"]


def test_a_batch_over_the_limit_is_refused(api, monkeypatch):
    from casework.fraud import services

    monkeypatch.setattr(services, "MAX_ALERTS_PER_BATCH", 2)
    response = api.post(URL, [CLEAN, CLEAN, CLEAN], format="json")
    assert response.status_code == 400
    assert "At most 2 alerts at a time" in response.json()["non_field_errors"][0]
    assert not Alert.objects.exists()
