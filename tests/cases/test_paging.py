"""Pages never overlap: every sort ends with -created_at, -id, and the count stays cheap."""

from __future__ import annotations

import pytest
from django.utils import timezone

from casework.cases import pagination
from casework.cases.models import Case

pytestmark = pytest.mark.django_db

SORTS = ["priority", "-priority", "created", "-created", "updated", "-updated", "reference", "-reference",
         "status", "-status", None]


@pytest.fixture
def many_cases(alice):
    """53 cases sharing one created_at and four priorities: only the id tells them apart."""
    now = timezone.now()
    Case.objects.bulk_create([
        Case(reference=f"FRA-{i:06d}", case_type="fraud_alert", title=f"Case {i}",
             priority=["critical", "high", "medium", "low"][i % 4], created_at=now, updated_at=now)
        for i in range(1, 54)
    ])
    Case.objects.update(created_at=now, updated_at=now)  # auto_now_add ignores the value given
    return set(Case.objects.values_list("reference", flat=True))


@pytest.mark.parametrize("ordering", SORTS)
def test_walking_the_api_pages_finds_every_case_once(api, many_cases, ordering):
    seen: list[str] = []
    params = {"page_size": 10, **({"ordering": ordering} if ordering else {})}
    url, page = "/api/cases/", 0
    while url:
        body = api.get(url, params if page == 0 else None).json()
        seen += [row["reference"] for row in body["results"]]
        url, page = body["next"], page + 1
    assert len(seen) == len(set(seen)) == len(many_cases)
    assert set(seen) == many_cases


def test_the_priority_sort_puts_critical_first_then_newest(api, many_cases):
    rows = api.get("/api/cases/", {"ordering": "priority", "page_size": 100}).json()["results"]
    ranks = [Case.PRIORITY_RANK[r["priority"]] for r in rows]
    assert ranks == sorted(ranks)
    critical = [r["reference"] for r in rows if r["priority"] == "critical"]
    assert critical == sorted(critical, reverse=True)  # equal created_at: the higher id first


def test_page_size_has_a_maximum(api, many_cases):
    assert len(api.get("/api/cases/", {"page_size": 5}).json()["results"]) == 5
    assert len(api.get("/api/cases/", {"page_size": 1000}).json()["results"]) == 53  # capped at 100
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    params = {p["name"]: p for p in schema["paths"]["/api/cases/"]["get"]["parameters"]}
    assert "at most 100" in params["page_size"]["description"]


def test_the_count_is_capped(api, many_cases, monkeypatch):
    monkeypatch.setattr(pagination, "COUNT_CAP", 20)
    body = api.get("/api/cases/").json()
    assert body["count"] == 20 and body["count_capped"] is True
    assert api.get("/api/cases/", {"q": "Case 1"}).json()["count_capped"] is False


def test_the_queue_page_says_when_the_count_is_capped(alice_client, many_cases, monkeypatch):
    monkeypatch.setattr(pagination, "COUNT_CAP", 20)
    assert "20+ cases" in alice_client.get("/cases/").content.decode()


def test_a_text_search_is_counted_to_its_own_lower_cap(api, alice_client, many_cases, monkeypatch):
    # A search's count walks the newest cases until it has the cap's worth of matches: its
    # cap is lower, so a common word costs a bounded walk (bench/queue_100k.py at 10^6).
    monkeypatch.setattr(pagination, "COUNT_CAP", 50)
    monkeypatch.setattr(pagination, "SEARCH_COUNT_CAP", 30)
    assert api.get("/api/cases/").json()["count_capped"] is True  # 53 cases, cap 50
    body = api.get("/api/cases/", {"q": "Case"}).json()
    assert body["count"] == 30 and body["count_capped"] is True and len(body["results"]) == 25
    page = alice_client.get("/cases/", {"q": "Case"}).content.decode()
    assert "30+ cases" in page
    assert api.get("/api/cases/", {"q": "  "}).json()["count"] == 50  # blank: no search, the usual cap


def test_an_over_long_search_is_a_400_naming_q(api, many_cases):
    response = api.get("/api/cases/", {"q": "x" * 101})
    assert response.status_code == 400 and "q" in response.json()
