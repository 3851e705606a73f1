"""The workbench in the browser (issue 14): the dashboard draws its charts under the CSP and
shows the agreement between agents and people, at 1366, 820 and 390 px without sideways
scrolling; a notification is read once its person acts on it (opens the case).

Screenshots go to VAR_DIR/screenshots/ (var/test/screenshots/ under pytest; never committed),
for a person to look at."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from casework.cases.models import Case, Decision
from casework.cases.services import case_assign, case_create
from casework.support.models import Customer, Ticket

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(settings.VAR_DIR) / "screenshots"
WIDTHS = (1366, 820, 390)


def _support_case(n: int, recommended: str, outcome: str | None, actor) -> Case:
    case = case_create(actor=actor, case_type="support_ticket", title=f"Ticket {n}: invoice question")
    customer, _ = Customer.objects.get_or_create(customer_id="cust-1")
    Ticket.objects.create(case=case, ticket_id=f"TKT-{n:08d}", customer=customer, recommended_action=recommended)
    if outcome:
        Decision.objects.create(case=case, outcome=outcome, reason="read the thread", decided_by=actor)
        Case.objects.filter(pk=case.pk).update(status="closed", closed_at=timezone.now())
    return case


def test_the_dashboard_draws_its_charts_and_shows_agreement_at_three_widths(page, log_in, alice):
    _support_case(1, "escalate_human", "escalated", alice)
    _support_case(2, "auto_respond", "replied", alice)
    disagreed = _support_case(3, "auto_respond", "escalated", alice)
    _support_case(4, "route_specialist", None, alice)
    log_in(page, "alice", "alice-pass-123")
    page.goto("/")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.reload()
        charts = page.locator("canvas[data-chart]")
        assert charts.count() == 8
        # Chart.js drew every canvas (the vendored copy, from a static file: the CSP allows it).
        page.wait_for_function("() => [...document.querySelectorAll('canvas[data-chart]')]"
                               ".every(c => window.Chart && Chart.getChart(c))")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, f"sideways scroll at {width} px"
        page.screenshot(path=str(SCREENSHOTS / f"dashboard-{width}.png"), full_page=True)
    assert not page.js_errors
    row = page.locator("#agreement-table tbody tr", has_text="Support ticket")
    assert "67 %" in row.inner_text()
    link = page.locator("#disagreements a", has_text=disagreed.reference)
    assert "Auto-respond" in page.locator("#disagreements li").first.inner_text()
    with page.expect_navigation():
        link.click()
    assert page.url.endswith(f"/cases/{disagreed.reference}/")


def test_a_notification_is_read_when_its_person_opens_the_case(page, log_in, alice, ivan):
    case = case_create(actor=alice, case_type="support_ticket", title="Refund for a double charge")
    customer = Customer.objects.create(customer_id="cust-2")
    Ticket.objects.create(case=case, ticket_id="TKT-00000009", customer=customer)
    case_assign(actor=alice, case=case, assignee=ivan)  # on commit: ivan is told
    log_in(page, "ivan", "ivan-pass-123")
    page.goto("/notifications/")
    assert page.locator("#nav-unread").inner_text() == "1"
    with page.expect_navigation():
        page.get_by_role("link", name=f"{case.reference} assigned to you").click()
    assert page.url.endswith(f"/cases/{case.reference}/")
    assert page.locator("#nav-unread").count() == 0  # the badge is gone on the case page itself
    page.goto("/notifications/")
    assert page.locator(".notification.unread").count() == 0
    page.set_viewport_size({"width": 390, "height": 900})
    page.reload()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "notifications-390.png"), full_page=True)
