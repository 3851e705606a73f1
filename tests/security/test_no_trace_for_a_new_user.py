"""Need-to-know as a new user would test it: ivan of the support desk follows every link and
htmx address from the home page, and every API address the answers name, over the whole demo,
and in every page, answer and case report (the PDF's text) finds no trace of another team's case: not its reference, nor an entity only such a case
names."""

from __future__ import annotations

import html
import io
import re
from collections import deque
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from pypdf import PdfReader

from casework.cases.models import Case
from casework.cases.visibility import cases_visible_to
from casework.entities.models import Entity, Mention
from tests.demo_snapshot import demo_loaded

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.long(seconds=50)]

LINK = re.compile(r'(?:href|hx-get|action|src)="(/[^"#]*)"|"(?:url|href|self|next|previous)":\s*"(?:http://testserver)?(/[^"]*)"')
# The schema and its docs are the same for everyone: their made-up examples (ACC-1043) are no data.
SKIP = ("/logout", "/static/", "/oidc/", "/admin/logout", "/media/", "/api/schema/", "/api/docs/")
MAX_PAGES = 600
VARIANTS_PER_PATH = 3


def _addresses(text: str) -> list[str]:
    found = []
    for a, b in LINK.findall(text):
        found.append(html.unescape(a or b))
    return found


def test_a_support_agent_following_every_link_finds_no_trace_of_other_teams(client):
    demo_loaded()
    ivan = User.objects.get(username="ivan")
    visible = set(cases_visible_to(ivan).values_list("pk", flat=True))
    hidden = Case.objects.exclude(pk__in=visible)
    hidden_refs = set(hidden.values_list("reference", flat=True))
    assert hidden_refs and visible, "the demo has cases on both sides"
    seen_entities = set(Mention.objects.filter(case_id__in=visible).values_list("entity_id", flat=True))
    # Identifiers (an account, a card, an address: a digit or an @ in them), not plain words
    # such as "payments" that any page may say.
    hidden_only = {value for pair in Entity.objects.exclude(pk__in=seen_entities)
                   .filter(mentions__case__in=hidden).values_list("value", "display") for value in pair
                   if len(value) >= 6 and re.search(r"[\d@]", value)}
    ref_pattern = re.compile("|".join(re.escape(r) for r in sorted(hidden_refs)))

    client.force_login(ivan)
    queue = deque(["/", "/cases/", "/support/", "/notifications/", "/api/cases/",
                   f"/people/{ivan.username}/access/"])
    done: set[str] = set()
    per_path: dict[str, int] = {}
    leaks = []
    pdfs = 0
    while queue and len(done) < MAX_PAGES:
        address = queue.popleft()
        if address in done or address.startswith(SKIP):
            continue
        path = urlsplit(address).path
        if per_path.get(path, 0) >= VARIANTS_PER_PATH:
            continue
        per_path[path] = per_path.get(path, 0) + 1
        done.add(address)
        response = client.get(address, HTTP_ACCEPT="text/html,application/json")
        assert response.status_code < 500, address
        kind = response.get("Content-Type", "")
        if response.streaming or not kind.startswith(("text/", "application/json", "application/pdf")):
            continue
        if kind.startswith("application/pdf"):  # the case report: its text is searched as a page's
            text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(response.content)).pages)
            pdfs += 1
        else:
            text = response.content.decode(response.charset or "utf-8", errors="replace")
        if ref_pattern.search(text):
            leaks.append((address, ref_pattern.search(text).group(0)))
        leaks += [(address, value) for value in hidden_only if value in text]
        if response.status_code == 200:
            queue.extend(a for a in _addresses(text) if a not in done)
    assert len(done) > 50, f"the crawl reached only {len(done)} addresses"
    assert pdfs >= 5, f"the crawl read only {pdfs} case reports"
    assert leaks == [], leaks[:40]
