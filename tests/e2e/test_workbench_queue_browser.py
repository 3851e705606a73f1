"""Working the queue in a real browser (issue 14): a saved view saved, pinned into the
navigation and opened with its filters; a bulk close whose confirmation names the count and
whose result names the skipped cases; the keyboard path from the queue to a decided fraud
case; and every page at a phone's, a tablet's and a laptop's width without sideways scroll."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from casework.cases.models import Case, Decision
from casework.cases.services import case_close, case_create
from tests.access.conftest import mark  # noqa: F401 - fixture
from tests.support.conftest import support_data  # noqa: F401 - fixture

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

WIDTHS = [(390, 844), (820, 1180), (1366, 900)]


def test_a_saved_view_is_saved_pinned_and_opens_with_its_filters(page, log_in, alice):
    hot = case_create(actor=alice, case_type="fraud_alert", title="Hot alert", priority="critical")
    case_create(actor=alice, case_type="fraud_alert", title="Calm alert", priority="low")
    log_in(page, "alice", "alice-pass-123", next_path="/cases/")
    page.locator("#id_priority").select_option("critical")
    expect(page).to_have_url(re.compile(r"priority=critical"))
    expect(page.locator("tr.queue-row")).to_have_count(1)
    page.get_by_text("Save these filters as a view").click()
    page.get_by_label("Name").fill("Critical now")
    with page.expect_navigation(url=re.compile(r"/cases/\?priority=critical(&ordering=-created)?&view=\d+")):
        page.get_by_role("button", name="Save view").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Critical now")
    # From another page, the navigation opens the view with its filter applied.
    page.goto("/cases/")
    expect(page.locator("tr.queue-row")).to_have_count(2)
    page.locator("nav a.nav-view", has_text="Critical now").click()
    expect(page.locator("#id_priority")).to_have_value("critical")
    expect(page.locator("tr.queue-row")).to_have_count(1)
    expect(page.locator("tr.queue-row .ref")).to_have_text(hot.reference)
    assert page.js_errors == []


def test_a_bulk_close_names_the_count_and_the_skipped_cases(page, log_in, alice):
    # Thirty rows, more than a page (25): 28 false positives, a ticket and one already decided.
    done = case_create(actor=alice, case_type="fraud_alert", title="Already decided")
    case_close(actor=alice, case=done, outcome="legit", reason="Checked")
    ticket = case_create(actor=alice, case_type="support_ticket", title="Refund")
    cases = [case_create(actor=alice, case_type="fraud_alert", title=f"Payroll batch {i}") for i in range(28)]
    log_in(page, "alice", "alice-pass-123", next_path="/cases/")
    page.locator("#select-all").check()
    expect(page.locator("#bulk-count")).to_have_text("25 selected")
    page.get_by_role("button", name="Select all 30 cases matching these filters").click()
    expect(page.locator("#bulk-count")).to_have_text("All 30 selected")
    page.locator("#bulk-action").select_option("close")
    page.locator("#bulk-outcome").select_option("false_positive")
    page.locator("#bulk-reason").fill("Known payroll batch")
    page.get_by_role("button", name="Apply to selected").click()
    dialog = page.get_by_role("alertdialog")
    expect(dialog.get_by_role("heading")).to_have_text("Close 30 cases as Dismissed as false positive?")
    assert Decision.objects.count() == 1  # nothing closed before the confirmation
    expect(page.locator("#bulk-confirm-button")).to_be_focused()
    expect(page.locator("#bulk-confirm-button")).to_have_text("Close 30 cases")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.get_by_text("Closed 28 cases.")).to_be_visible()
    skipped = page.locator(".flash-warning")
    expect(skipped).to_contain_text("Skipped 2 cases")
    expect(skipped).to_contain_text(f"{ticket.reference}: “Dismissed as false positive” is not an outcome of a support ticket")
    expect(skipped).to_contain_text(f"{done.reference}: already closed")
    assert all(Case.objects.get(pk=c.pk).status == "closed" for c in cases)
    assert page.js_errors == []


def test_the_keyboard_goes_from_the_queue_to_a_decided_case_in_five_keys(page, log_in, alice):
    from casework.fraud.services import alert_create
    from tests.fraud.conftest import CYCLING

    other = case_create(actor=alice, case_type="support_ticket", title="Older, unassigned")
    alert = alert_create(actor=alice, data=CYCLING)
    log_in(page, "alice", "alice-pass-123", next_path="/cases/")
    keys = []

    def press(key):
        keys.append(key)
        page.keyboard.press(key)

    press("?")
    expect(page.get_by_role("dialog")).to_contain_text("Next / previous case in the queue")
    page.keyboard.press("Escape")  # closing the help is not part of the path
    expect(page.get_by_role("dialog")).to_be_hidden()
    keys.clear()
    press("j")
    expect(page.locator("tr.queue-row.kb-focus .ref")).to_have_text(alert.case.reference)
    with page.expect_navigation():
        press("Enter")
    press("d")
    expect(page.get_by_label("Reason")).to_be_focused()
    page.keyboard.type("Deposits leave within two days.")  # typing the reason is not counted
    press("Tab")
    expect(page.get_by_role("button", name="Confirm Fraud")).to_be_focused()
    with page.expect_navigation():
        press("Enter")
    expect(page.locator("#decision .fraud-outcome")).to_have_text("Confirmed fraud")
    assert len(keys) <= 6, keys
    assert Decision.objects.get(case=alert.case).outcome == "confirmed_fraud"
    page.keyboard.press("c")
    expect(page.locator("#comments textarea")).to_be_focused()
    page.keyboard.type("j and k typed here stay text")
    expect(page).to_have_url(re.compile(f"/cases/{alert.case.reference}/"))

    # Tabs: arrow keys move and open, the choice is in the address and survives a reload.
    page.get_by_role("tab", name="Overview").focus()
    page.keyboard.press("ArrowRight")
    second = page.get_by_role("tab").nth(1)
    expect(second).to_be_focused()
    expect(second).to_have_attribute("aria-selected", "true")
    expect(page).to_have_url(re.compile(r"\?tab=[\w-]+"))
    page.reload()
    expect(page.get_by_role("tab").nth(1)).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("tab").nth(1)).to_have_attribute("tabindex", "0")
    expect(page.get_by_role("tab", name="Overview")).to_have_attribute("tabindex", "-1")
    page.keyboard.press("End")  # focus is on the body: keys outside the tablist do nothing to it
    page.get_by_role("tab").nth(1).focus()
    page.keyboard.press("Home")
    expect(page.get_by_role("tab", name="Overview")).to_have_attribute("aria-selected", "true")

    # a: the focused row is assigned to me, and the keyboard keeps its place on the new row.
    page.goto("/cases/")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("a")
    row = page.locator(f"#case-row-{other.pk}")
    expect(row).to_contain_text("alice")
    expect(row).to_have_class(re.compile("kb-focus"))
    assert Case.objects.get(pk=other.pk).assignee == alice
    assert page.js_errors == []


def _no_sideways_scroll(page, label):
    sizes = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert sizes[0] <= sizes[1], f"{label} scrolls sideways: {sizes[0]} px wide in a {sizes[1]} px window"


@pytest.fixture
def one_case_of_each_type(alice, ivan, mona, mark, support_data):  # noqa: F811 - fixtures imported above
    """A case of every type, made the way real ones arrive (their pipelines run), and an
    access request waiting in Mona's inbox."""
    from casework.access.demo import demo_load_access
    from casework.fraud.services import alert_create
    from casework.transactions.demo import demo_load_transactions
    from tests.fraud.conftest import CYCLING
    from tests.releases.conftest import SEED
    from tests.releases.conftest import submit as release_submit
    from tests.support.conftest import send

    alert_create(actor=alice, data=CYCLING)
    send(alice, "CUST-001", "I was charged twice for invoice 2291, please refund one of them.")
    release_submit(SEED)
    demo_load_transactions(users={"alice": alice, "ivan": ivan}, cards={"CARD-1016"})
    demo_load_access(users={"alice": alice, "mona": mona, "mark": mark})  # requests in Mona's inbox
    cases = [Case.objects.filter(case_type=t).order_by("-id").first() for t in
             ("fraud_alert", "support_ticket", "access_change", "transaction_investigation", "release_risk")]
    assert all(cases), cases
    return cases


@pytest.mark.long(seconds=20)
def test_every_page_fits_a_phone_a_tablet_and_a_laptop(browser, live_server, tmp_path, one_case_of_each_type):
    investigator = ["/", "/cases/", "/notifications/", "/saved-views/",
                    *[f"/cases/{c.reference}/" for c in one_case_of_each_type]]
    people = [("alice", "alice-pass-123", investigator), ("mona", "mona-pass-123", ["/access/inbox/"])]
    shots = 0
    # Each person signs in once; each page is then loaded afresh at each width.
    for username, password, paths in people:
        width, height = WIDTHS[0]
        context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": height})
        page = context.new_page()
        page.goto("/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        with page.expect_navigation():
            page.get_by_role("button", name="Log in").click()
        for width, height in WIDTHS:
            page.set_viewport_size({"width": width, "height": height})
            for path in paths:
                page.goto(path)
                _no_sideways_scroll(page, f"{path} as {username} at {width} px")
                name = re.sub(r"[^\w]+", "_", path).strip("_") or "dashboard"
                # The whole page on the phone, where everything stacks; the first screen otherwise.
                page.screenshot(path=tmp_path / f"{width}-{username}-{name}.png", full_page=width == 390)
                shots += 1
        context.close()
    assert shots == len(WIDTHS) * sum(len(p) for _, _, p in people)
