"""One account across three case types in a real browser: from the support ticket's "Seen in
other cases" to the fraud alert, from there to the graph, whose node opens the transaction
investigation; that investigation is linked to the ticket, then a duplicate ticket is merged
and its page sends people on."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from casework.entities.models import Entity
from tests.entities.conftest import ACCOUNT, alert, investigation, ticket  # noqa: F401 - fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_account_is_followed_across_cases_through_the_panel_and_the_graph(
        page, log_in, alice, alert, ticket, investigation):  # noqa: F811 - the fixtures imported above
    fraud = alert().case
    txn = investigation().case
    support = ticket().case
    dup = ticket(message=f"Again: my account {ACCOUNT} was used by someone else.").case
    account = Entity.objects.get(kind="account", value=ACCOUNT)

    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{support.reference}/")
    panel = page.locator("#seen-elsewhere")
    row = panel.locator("li.entity-row", has_text=f"Account: {ACCOUNT}")
    expect(row).to_contain_text("in 3 other cases")
    row.get_by_role("link", name=fraud.reference).click()
    expect(page.locator("h1")).to_contain_text(ACCOUNT)
    assert page.url.endswith(f"/cases/{fraud.reference}/")

    page.locator("#case-graph-link").click()
    graph = page.locator("#entity-graph")
    expect(graph.locator("canvas").first).to_be_attached()
    nodes = page.locator(".entity-graph-nodes")
    expect(nodes.locator(f'a[data-node="e{account.pk}"]')).to_be_visible()
    nodes.locator(f'a[data-node="c{txn.pk}"]').click()
    assert page.url.endswith(f"/cases/{txn.reference}/")
    assert not page.js_errors

    # The investigation is linked to the ticket, with a reason: both pages list the link.
    links = page.locator("#case-links")
    links.get_by_label("Kind").select_option("related")
    links.get_by_label("Case reference").fill(support.reference)
    links.get_by_label("Why they are linked").fill("The customer disputes this transaction.")
    links.get_by_role("button", name="Link", exact=True).click()
    expect(page.locator("#case-links")).to_contain_text(f"Related {support.reference}")
    page.goto(f"/cases/{support.reference}/")
    expect(page.locator("#case-links")).to_contain_text(f"Related {txn.reference}")

    # The duplicate ticket is merged into the first; its page now says where it went.
    page.goto(f"/cases/{dup.reference}/")
    links.get_by_label("Merge into (reference)").fill(support.reference)
    links.get_by_label("Why it is a duplicate").fill("Same account takeover, written twice.")
    links.get_by_role("button", name="Merge").click()
    assert page.url.endswith(f"/cases/{support.reference}/")
    page.goto(f"/cases/{dup.reference}/")
    expect(page.locator(".flash")).to_contain_text(f"{dup.reference} was merged into {support.reference}")
    expect(page.locator("#case-links")).to_contain_text(dup.reference)
