"""Every page's shell: each case type's stylesheet and navigation links come from what the
type registered (casework.cases.shell), not from names in templates/base.html."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from casework.cases.shell import NAV_LINKS, STYLESHEETS

pytestmark = pytest.mark.django_db


def _nav_links(html: str) -> list[tuple[str, str]]:
    nav = html[html.index("<nav"):html.index("</nav>")]
    return re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)', nav)


def test_each_case_type_registered_its_stylesheet_and_every_page_links_it(alice_client):
    html = alice_client.get(reverse("cases:queue")).content.decode()

    assert sorted(STYLESHEETS) == sorted(f"{t}/{t}.css" for t in ("fraud", "support", "access", "transactions",
                                                                   "releases"))
    for path in STYLESHEETS:
        assert f'<link rel="stylesheet" href="/static/{path}">' in html


def test_an_investigator_sees_the_types_links_in_their_order_and_the_current_one_marked(alice_client):
    html = alice_client.get(reverse("fraud:patterns")).content.decode()

    labels = [label for _, label in _nav_links(html)]
    assert [label for label in labels if label in {link.label for link in NAV_LINKS}] == [
        "Fraud", "Support", "Report access change", "Transactions", "Releases"]
    assert re.search(r'<a href="/fraud/[^"]*" aria-current="page">Fraud</a>', html)
    assert not re.search(r'aria-current="page">Support<', html)


def test_a_manager_sees_only_the_inbox_with_what_waits_for_them(client, mona):
    client.force_login(mona)
    html = client.get(reverse("access:inbox")).content.decode()

    labels = [label for _, label in _nav_links(html)]
    assert "Inbox" in labels and "Fraud" not in labels and "Releases" not in labels
    assert re.search(r'<a href="/access/inbox/" aria-current="page">Inbox</a>', html)
