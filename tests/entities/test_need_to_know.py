"""Need-to-know through the entity doors: a support team member sees none of the fraud side.

Two teams (fraud: fraud alerts and transaction investigations; support: support tickets); a
fraud alert and a support ticket both naming the account and the IP, the alert alone naming
its device. Through the case panel, the entity page and its graph, the case graph, the links
and the API, the support member meets no fraud case, no count of one, and no trace of the
device only the fraud case names.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from casework.cases.services import case_close
from casework.entities.models import Entity
from casework.entities.services import case_link
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set
from tests.entities.conftest import ACCOUNT, IP

pytestmark = pytest.mark.django_db

DEVICE = "DEV-RING-A1"


def _member(username: str, name: str, case_types: list[str]):
    user = user_create(actor="system", username=username, password=f"{username}-pass-123", role=INVESTIGATOR)
    team_member_set(actor="system", team=team_create(actor="system", name=name, case_types=case_types), user=user)
    return user


@pytest.fixture
def sides(alice, alert, ticket, client):
    """(support member's client, fraud member's client, fraud case, support case)."""
    fraud = alert().case
    case_close(actor=alice, case=fraud, outcome="confirmed_fraud", reason="Mule ring.")
    support = ticket().case
    case_link(actor=alice, from_case=support, to_case=fraud, kind="related", reason="Same caller.")
    sam = _member("sam", "Support", ["support_ticket"])
    fiona = _member("fiona", "Fraud", ["fraud_alert", "transaction_investigation"])
    from django.test import Client

    sam_client, fiona_client = Client(), Client()
    sam_client.force_login(sam)
    fiona_client.force_login(fiona)
    return sam_client, fiona_client, fraud, support


def _panel(page: str) -> str:
    """The case page's "Seen in other cases" and "Linked cases" (casework.entities's panel)."""
    start = page.index('<article id="seen-elsewhere"')
    return page[start:page.index("</article>", page.index('<article id="case-links"'))]


def test_the_case_panel_shows_a_support_member_no_fraud_case_nor_its_count(sides, alice_client):
    sam, fiona, fraud, support = sides
    page = _panel(sam.get(f"/cases/{support.reference}/").content.decode())
    assert fraud.reference not in page
    assert "only here" in page and "in 1 other case" not in page  # the shared account: counted as sam sees it
    assert DEVICE not in page
    # alice, in every team, sees the fraud case there; fiona (fraud) not the ticket on the fraud case.
    assert fraud.reference in _panel(alice_client.get(f"/cases/{support.reference}/").content.decode())
    assert support.reference not in _panel(fiona.get(f"/cases/{fraud.reference}/").content.decode())


def test_an_entity_only_a_hidden_case_names_is_not_found_and_a_shared_one_lists_only_visible_cases(sides):
    sam, fiona, fraud, support = sides
    device = Entity.objects.get(kind="device", value=DEVICE)
    account = Entity.objects.get(kind="account", value=ACCOUNT)
    for url in (f"/entities/{device.pk}/", f"/entities/{device.pk}/graph/", f"/entities/{device.pk}/graph.json"):
        assert sam.get(url).status_code == 404, url
    assert fiona.get(f"/entities/{device.pk}/").status_code == 200

    page = sam.get(f"/entities/{account.pk}/").content.decode()
    assert support.reference in page and fraud.reference not in page
    assert "Named by 1 case." in page and "a case outside your teams" in page  # the flag, not its case
    graph = sam.get(f"/entities/{account.pk}/graph.json").json()
    shown = str(graph)
    assert fraud.reference not in shown and DEVICE not in shown and f"c{fraud.pk}" not in shown


def test_the_case_graph_and_links_leave_the_hidden_case_out(sides, alice_client):
    sam, fiona, fraud, support = sides
    graph = sam.get(f"/cases/{support.reference}/graph.json").json()
    nodes = {n["data"]["id"] for n in graph["nodes"]}
    assert f"c{fraud.pk}" not in nodes and not any(f"c{fraud.pk}" in (e["data"]["source"], e["data"]["target"])
                                                   for e in graph["edges"])
    # alice, in every team, sees both sides; fiona (fraud) the fraud side only.
    assert f"c{fraud.pk}" in {n["data"]["id"] for n in alice_client.get(f"/cases/{support.reference}/graph.json")
                              .json()["nodes"]}
    fraud_side = {n["data"]["id"] for n in fiona.get(f"/cases/{fraud.reference}/graph.json").json()["nodes"]}
    assert f"c{fraud.pk}" in fraud_side and f"c{support.pk}" not in fraud_side


def test_the_entity_api_answers_a_support_member_as_if_the_fraud_side_did_not_exist(sides):
    _, _, fraud, support = sides
    api = APIClient()
    from django.contrib.auth.models import User

    api.force_authenticate(User.objects.get(username="sam"))
    device = Entity.objects.get(kind="device", value=DEVICE)
    ip = Entity.objects.get(kind="ip", value=IP)
    assert api.get(f"/api/entities/{device.pk}/").status_code == 404
    data = api.get(f"/api/entities/{ip.pk}/").json()
    assert data["case_count"] == 1 and [c["reference"] for c in data["cases"]] == [support.reference]
    assert data["confirmed_fraud"] is True and data["confirmed_fraud_case"] is None
    related = api.get(f"/api/cases/{support.reference}/related/").json()
    assert fraud.reference not in str(related) and DEVICE not in str(related)
    assert all(e["other_case_count"] == 0 for e in related["entities"]) and related["linked"] == []
