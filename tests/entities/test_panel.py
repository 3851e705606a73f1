"""The case page's "Seen in other cases", the entity page and its audit, the fraud flag."""

from __future__ import annotations

import re

import pytest

from audit.models import AuditEntry
from casework.cases.services import case_close
from casework.entities.models import Entity
from casework.entities.selectors import case_seen_elsewhere, entity_page
from casework.entities.services import case_link
from tests.entities.conftest import ACCOUNT

pytestmark = pytest.mark.django_db


def test_the_panel_lists_other_cases_across_types_newest_first_with_status_and_decision(
        alice, alert, ticket, investigation):
    fraud = alert().case
    txn = investigation().case
    case_close(actor=alice, case=fraud, outcome="confirmed_fraud", reason="Mule ring device.")
    support = ticket().case

    rows = {(r.entity.kind, r.entity.display): r for r in case_seen_elsewhere(support, viewer=alice)}
    account = rows[("account", ACCOUNT)]
    assert account.other_count == 2
    assert [c.reference for c in account.others] == [txn.reference, fraud.reference]
    assert account.others[1].status == "closed" and account.others[1].decision_label == "Confirmed fraud"
    assert rows[("customer", "CUST-9001")].other_count == 0


def test_an_entity_a_fraud_decision_confirmed_is_flagged_on_every_case_naming_it(alice, alert, ticket, alice_client):
    fraud = alert().case
    case_close(actor=alice, case=fraud, outcome="confirmed_fraud", reason="Mule ring device.")
    support = ticket().case

    rows = case_seen_elsewhere(support, viewer=alice)
    flagged = {r.entity.kind for r in rows if r.entity.confirmed_fraud}
    assert flagged == {"account", "ip"}
    assert rows[0].entity.confirmed_fraud  # flagged first
    page = alice_client.get(f"/cases/{support.reference}/").content.decode()
    assert "confirmed fraud" in page and fraud.reference in page


def test_a_transaction_decided_fraud_flags_its_card_and_device(alice, investigation):
    txn = investigation().case
    case_close(actor=alice, case=txn, outcome="fraud", reason="Card testing.")
    assert set(Entity.objects.filter(confirmed_fraud_at__isnull=False).values_list("kind", flat=True)) == {
        "account", "card", "merchant", "device"}


def _panel(case, viewer) -> str:
    from django.template import Context, Template
    from django.test import RequestFactory

    request = RequestFactory().get(f"/cases/{case.reference}/")
    request.user = viewer
    return Template("{% load entity_tags %}{% seen_in_other_cases case %}").render(
        Context({"case": case, "request": request}))


def test_the_panel_costs_the_same_queries_with_one_other_case_or_many(alice, alert, ticket, investigation,
                                                                      django_assert_max_num_queries):
    support = ticket().case
    case_close(actor=alice, case=alert().case, outcome="confirmed_fraud", reason="Ring.")
    case_link(actor=alice, from_case=support, to_case=investigation().case, kind="related", reason="Same card.")
    _panel(support, alice)  # the person's teams, read once per request
    with django_assert_max_num_queries(4) as few:
        _panel(support, alice)
    for n in range(6):
        other = ticket(message=f"Another try on {ACCOUNT} from 10.0.0.{n}, attempt {n}.").case
        case_link(actor=alice, from_case=support, to_case=other, kind="related", reason="Same again.")
        case_close(actor=alice, case=alert(account=ACCOUNT, devices=(f"DEV-{n}",)).case, outcome="legit",
                   reason="Known.")
    with django_assert_max_num_queries(len(few)):
        html = _panel(support, alice)
    assert "confirmed fraud" in html and "Marked legit" in html
    assert max(r.other_count for r in case_seen_elsewhere(support, viewer=alice)) >= 13


def test_the_entity_page_shows_every_case_a_timeline_and_decisions_and_is_audited(alice, alice_client, alert,
                                                                                   ticket):
    fraud = alert().case
    case_close(actor=alice, case=fraud, outcome="legit", reason="Known customer.")
    support = ticket().case
    entity = Entity.objects.get(kind="account", value=ACCOUNT)

    response = alice_client.get(f"/entities/{entity.pk}/")

    page = response.content.decode()
    assert response.status_code == 200
    assert fraud.reference in page and support.reference in page and "Marked legit" in page
    assert "alice" in page  # who decided
    seen = AuditEntry.objects.get(action="entity.viewed")
    assert seen.actor == "alice" and seen.data["display"] == ACCOUNT and seen.object_id == str(entity.pk)
    data = entity_page(entity, viewer=alice)
    assert [e["what"] for e in data.timeline] == ["named", "decided", "named"]


def test_an_email_is_shown_masked_and_its_hash_never_reaches_the_audit(alice_client, ticket):
    ticket()
    email = Entity.objects.get(kind="email", display="d***@example.com")
    page = alice_client.get(f"/entities/{email.pk}/").content.decode()
    assert "d***@example.com" in page and "dana.doe" not in page.lower() and email.value not in page
    entry = AuditEntry.objects.get(action="entity.viewed")
    assert email.value not in str(entry.data)


def test_the_graph_json_holds_two_hops_and_links_each_node_to_its_page(alice_client, alert, ticket):
    fraud = alert().case
    support = ticket().case
    graph = alice_client.get(f"/cases/{support.reference}/graph.json").json()
    ids = {n["data"]["id"]: n["data"] for n in graph["nodes"]}
    assert ids[f"c{fraud.pk}"]["url"] == f"/cases/{fraud.reference}/"
    account = Entity.objects.get(kind="account", value=ACCOUNT)
    assert ids[f"e{account.pk}"]["url"] == f"/entities/{account.pk}/"
    assert any(e["data"]["source"] == f"c{fraud.pk}" and e["data"]["target"] == f"e{account.pk}"
               for e in graph["edges"])
    around = alice_client.get(f"/entities/{account.pk}/graph.json").json()
    labels = {n["data"]["label"] for n in around["nodes"]}
    assert "Device: DEV-RING-A1" in labels and "Customer: CUST-9001" in labels  # the second hop
    page = alice_client.get(f"/entities/{account.pk}/graph/").content.decode()
    assert f'data-url="/entities/{account.pk}/graph.json"' in page and "<script>" not in page


def _link(html: str, rel: str) -> str | None:
    found = re.search(rf'<a href="([^"]*)" rel="{rel}">', html)
    return found.group(1).replace("&amp;", "&") if found else None


def test_the_entity_page_pages_its_cases_newest_first_from_a_place_not_an_offset(
        alice_client, alert, ticket, investigation, monkeypatch):
    from casework.entities import selectors

    monkeypatch.setattr(selectors, "ENTITY_CASES", 1)
    fraud, support, txn = alert().case, ticket().case, investigation().case
    entity = Entity.objects.get(kind="account", value=ACCOUNT)
    url = f"/entities/{entity.pk}/"
    first = alice_client.get(url).content.decode()
    assert txn.reference in first and support.reference not in first and "Named by 3 cases" in first
    assert _link(first, "prev") is None and _link(first, "first") is None
    second = alice_client.get(url + _link(first, "next")).content.decode()
    assert support.reference in second and txn.reference not in second
    third = alice_client.get(url + _link(second, "next")).content.decode()
    assert fraud.reference in third and _link(third, "next") is None and _link(third, "first") == url
    back = alice_client.get(url + _link(third, "prev")).content.decode()
    assert support.reference in back and _link(back, "prev") and _link(back, "next")
    top = alice_client.get(url + _link(back, "prev")).content.decode()
    assert txn.reference in top and _link(top, "prev") is None and _link(top, "first") is None


@pytest.mark.parametrize("query,field", [({"before": "two"}, "before"), ({"after": "1-x"}, "after"),
                                         ({"before": "1-2", "after": "1-2"}, "after"),
                                         ({"before": f"{10**30}-1"}, "before"), ({"after": f"1-{2**63}"}, "after")])
def test_the_entity_page_refuses_a_place_it_did_not_give_naming_the_field(alice_client, alert, query, field):
    alert()
    entity = Entity.objects.get(kind="account", value=ACCOUNT)
    response = alice_client.get(f"/entities/{entity.pk}/", query)
    assert response.status_code == 400 and f"{field}: " in response.content.decode()


def test_an_entity_page_costs_three_queries_on_any_page(alice, alert, ticket, investigation,
                                                        django_assert_num_queries, monkeypatch):
    from casework.entities import selectors

    monkeypatch.setattr(selectors, "ENTITY_CASES", 1)
    alert(), ticket(), investigation()
    entity = Entity.objects.get(kind="account", value=ACCOUNT)
    entity_page(entity, viewer=alice)  # the person's teams, read once per request
    with django_assert_num_queries(3):
        top = entity_page(entity, viewer=alice)
    with django_assert_num_queries(3):
        middle = entity_page(entity, viewer=alice, before=top.older)
    with django_assert_num_queries(3):
        last = entity_page(entity, viewer=alice, before=middle.older)
    assert [len(p.cases) for p in (top, middle, last)] == [1, 1, 1] and last.older is None
    with django_assert_num_queries(3):
        assert entity_page(entity, viewer=alice, after=last.newer).cases == middle.cases


def test_the_count_of_cases_naming_an_entity_stops_at_its_cap(alice, alice_client, alert, ticket, investigation,
                                                              monkeypatch):
    from casework.entities import selectors

    monkeypatch.setattr(selectors, "COUNT_CAP", 2)
    alert()
    support = ticket().case
    account = Entity.objects.get(kind="account", value=ACCOUNT)
    assert "Named by 2 cases" in alice_client.get(f"/entities/{account.pk}/").content.decode()
    rows = {r.entity.kind: r for r in case_seen_elsewhere(support, viewer=alice)}
    assert (rows["account"].other_count, rows["account"].counted_all) == (1, True)
    investigation()
    page = entity_page(account, viewer=alice)
    assert (page.total, page.counted_all) == (2, False)
    assert "Named by more than 2 cases" in alice_client.get(f"/entities/{account.pk}/").content.decode()
    rows = {r.entity.kind: r for r in case_seen_elsewhere(support, viewer=alice)}
    assert (rows["account"].other_count, rows["account"].counted_all) == (2, True)
    alert(account=ACCOUNT, devices=("DEV-OTHER",))
    rows = {r.entity.kind: r for r in case_seen_elsewhere(support, viewer=alice)}
    assert (rows["account"].other_count, rows["account"].counted_all) == (2, False)
    assert "in more than 2 other cases" in _panel(support, alice)
