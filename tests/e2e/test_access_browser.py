"""An access review in a real browser: the employee answers through their link (no login),
their manager approves in the inbox, and the investigator reads the outcome on the case page."""

from __future__ import annotations

import pytest

from casework.access.models import HRMutation
from tests.access import conftest as access
from tests.access.conftest import employee_link

# The access tests' organisation (Mona manages Priya, Kees is on sick leave ...) as fixtures here.
mark, org, submit, inbox = access.mark, access.org, access.submit, access.inbox
# The flow past its requests: the agents' e-mails run without an approval here (autouse;
# tests/e2e/test_approvals_browser.py approves one).
_requests_without_approval = access._requests_without_approval

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_employee_answers_by_link_and_the_manager_approves_in_the_inbox(page, log_in, org, submit, alice):
    mutation = submit()
    assert mutation.status == "awaiting_user_response"
    link = employee_link(mutation)

    # The employee: no login, the change explained, a form.
    page.goto(link)
    assert page.get_by_role("heading", name="Please explain a change you made").is_visible()
    assert page.get_by_text("you changed Access level for Jan de Vries on FinanceApp", exact=False).is_visible()
    page.get_by_label("Something else").check()
    assert page.locator("#cover-fields").is_hidden()  # no colleague or dates for another reason
    page.get_by_label("I covered for a colleague on sick leave").check()
    assert page.locator("#cover-fields").is_visible()
    page.get_by_label("The colleague you covered for").select_option(label="Kees Bakker (Finance)")
    page.get_by_label("First day you covered").fill("2025-11-09")
    page.get_by_label("Last day you covered").fill("2025-11-12")
    page.get_by_label("Explain in your own words").fill("Kees was ill during month-end and asked me to.")
    with page.expect_navigation():
        page.get_by_role("button", name="Send my answer").click()
    assert page.get_by_role("heading", name="Thank you, Priya Patel").is_visible()

    # The link works once.
    page.goto(link)
    assert page.get_by_role("heading", name="You already answered").is_visible()
    mutation.refresh_from_db()
    assert mutation.status == "awaiting_manager_response"

    # The manager: her inbox, the evidence, the validated claim; she approves.
    landing = log_in(page, "mona", "mona-pass-123")
    assert landing.endswith("/")  # her dashboard (issue 14): the request waiting for her, with its age
    assert page.locator("#manager-requests tbody tr").count() == 1
    page.goto("/access/inbox/")
    assert page.locator(".nav-count").first.inner_text() == "1"
    with page.expect_navigation():
        page.get_by_role("button", name="Review").click()
    assert page.get_by_text("Confirmed by the records", exact=True).is_visible()  # the badge; the reason says it too
    assert page.get_by_role("cell", name="Write is below the required Admin").is_visible()
    page.get_by_label("Approve the change").check()
    page.get_by_label("Comment").fill("I asked Priya to stand in for Kees.")
    with page.expect_navigation():
        page.get_by_role("button", name="Send my decision").click()
    assert page.get_by_text("You approved the change.").is_visible()
    assert page.get_by_text("Nothing is waiting for you.").is_visible()

    mutation = HRMutation.objects.get(pk=mutation.pk)
    assert mutation.status == "advisory_report_generated"
    assert mutation.reports.get().recommendation == "accept"

    # The investigator: the report and the decision form on the case page.
    page.context.clear_cookies()
    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{mutation.case.reference}/")
    page.get_by_role("tab", name="Advisory report & decision").click()
    assert page.locator("#access-recommendation").inner_text() == "Recommendation: Accept"
    page.get_by_role("tab", name="Agent messages").click()
    assert page.locator("#access-tab-messages").get_by_text("manager_validation_response").is_visible()
    # The report is in, and the case waits for the investigator's decision (issue 13) ...
    assert page.locator("#case-meta .badge-status-awaiting_decision").inner_text() == "Awaiting decision"
    page.get_by_role("tab", name="Advisory report & decision").click()
    page.locator("#tab-access-report").get_by_label("Reason").fill("The manager confirmed the cover; records agree.")
    with page.expect_navigation():
        page.get_by_role("button", name="Decide and close").click()
    # ... which closes it.
    assert page.locator("#case-meta .badge-status-closed").inner_text() == "Closed"
    assert HRMutation.objects.get(pk=mutation.pk).case.decisions.get().outcome == "accepted"
    assert page.js_errors == []
