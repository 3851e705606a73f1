"""Working the queue: My cases / assignee=me on the page and the API, sort labels that say
which end comes first, sortable headers with aria-sort."""

from __future__ import annotations

import re

import pytest

from casework.cases.filters import CaseFilter
from casework.cases.services import case_assign, case_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def cases(alice, ivan):
    made = {p: case_create(actor=alice, case_type="fraud_alert", title=f"{p} alert", priority=p)
            for p in ("low", "critical", "medium", "high")}
    case_assign(actor=alice, case=made["low"], assignee=alice)
    case_assign(actor=alice, case=made["high"], assignee=alice)
    case_assign(actor=alice, case=made["critical"], assignee=ivan)
    return made


def listed(response) -> list[str]:
    assert response.status_code == 200
    return re.findall(r'<td class="ref"><a href="/cases/[^"]+/">([A-Z]{3}-\d{6})</a>', response.content.decode())


def test_assignee_me_lists_the_cases_of_whoever_asks(client, alice, ivan, cases):
    client.force_login(alice)
    assert sorted(listed(client.get("/cases/", {"assignee": "me"}))) == sorted(
        [cases["low"].reference, cases["high"].reference])
    client.force_login(ivan)
    assert listed(client.get("/cases/", {"assignee": "me"})) == [cases["critical"].reference]


def test_my_cases_is_in_the_navigation_and_titles_the_page(alice_client, cases):
    html = alice_client.get("/cases/", {"assignee": "me"}).content.decode()
    assert 'id="nav-my-cases"' in html and 'href="/cases/?assignee=me"' in html
    assert "<h1>My cases</h1>" in html
    assert '<option value="me" selected>Me</option>' in html


def test_assignee_me_in_the_api(api, cases):
    response = api.get("/api/cases/", {"assignee": "me"})
    assert response.status_code == 200
    assert {c["reference"] for c in response.json()["results"]} == {cases["low"].reference, cases["high"].reference}


def test_an_unknown_assignee_is_still_a_400_naming_it(api, alice_client, cases):
    response = api.get("/api/cases/", {"assignee": "nobody-here"})
    assert response.status_code == 400 and "assignee" in response.json()
    assert alice_client.get("/cases/", {"assignee": "nobody-here"}).status_code == 400


def test_priority_sorts_critical_first_and_says_so(alice_client, cases):
    order = listed(alice_client.get("/cases/", {"ordering": "priority"}))
    assert order == [cases[p].reference for p in ("critical", "high", "medium", "low")]
    assert listed(alice_client.get("/cases/", {"ordering": "-priority"}))[0] == cases["low"].reference
    labels = dict(CaseFilter().filters["ordering"].extra["choices"])
    assert labels["priority"] == "Priority: critical first"
    assert labels["-priority"] == "Priority: low first"
    assert not any("descending" in label.lower() for label in labels.values())


def test_the_headers_sort_and_show_the_direction(alice_client, cases):
    html = alice_client.get("/cases/", {"status": "in_progress"}).content.decode()
    # Not sorted by priority yet: its header offers critical first, keeping the filters.
    assert re.search(r'<th scope="col" class=""><a href="\?status=in_progress&amp;ordering=priority"', html)
    html = alice_client.get("/cases/", {"ordering": "priority"}).content.decode()
    header = re.search(r'<th scope="col" class="" aria-sort="(\w+)"><a href="\?ordering=-priority"[^>]*>Priority', html)
    assert header and header.group(1) == "descending"
    assert "Sorted Priority: critical first" in html
    html = alice_client.get("/cases/", {"ordering": "-updated"}).content.decode()
    assert re.search(r'aria-sort="descending"><a href="\?ordering=updated"', html)
