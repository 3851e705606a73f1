"""An investigator's first minutes, in a real browser: log in, open the queue, filter it,
open a case, add a comment that appears without a full page load."""

from __future__ import annotations

import pytest

from casework.cases.models import Comment
from casework.cases.services import case_assign, case_create

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def cases(alice):
    fraud = case_create(actor=alice, case_type="fraud_alert", title="Deposit-withdraw cycling",
                        priority="critical")
    case_create(actor=alice, case_type="support_ticket", title="Refund not received", priority="high")
    case_create(actor=alice, case_type="release_risk", title="Release v2.1.0", priority="medium")
    case_assign(actor=alice, case=fraud, assignee=alice)
    return fraud


def queue_refs(page) -> list[str]:
    return page.locator("#queue-results td.ref a").all_inner_texts()


def test_an_investigator_logs_in_filters_the_queue_and_comments(page, log_in, alice, cases):
    # Anonymous: the queue sends you to log in, then back.
    page.goto("/cases/")
    assert "/login/?next=/cases/" in page.url
    log_in(page, "alice", "alice-pass-123", next_path="/cases/", form=True)
    assert page.url.endswith("/cases/")
    assert page.get_by_role("heading", name="Case queue").is_visible()
    assert sorted(queue_refs(page)) == ["FRA-000001", "REL-000001", "SUP-000001"]

    # Filtering swaps the results in place: the page itself is not reloaded.
    page.evaluate("window.__samePage = true")
    with page.expect_response(lambda r: "status=in_progress" in r.url and r.status == 200):
        page.select_option("select[name=status]", "in_progress")
    # A function, not an expression: Playwright evaluates an expression with eval() while it
    # polls, which the page's CSP refuses (the first check passes only if the swap is done).
    page.wait_for_function("() => document.querySelectorAll('#queue-results td.ref').length === 1")
    assert queue_refs(page) == ["FRA-000001"]
    assert "status=in_progress" in page.url
    assert page.evaluate("window.__samePage") is True

    with page.expect_response(lambda r: "case_type=support_ticket" in r.url):
        page.select_option("select[name=status]", "")
        page.select_option("select[name=case_type]", "support_ticket")
    page.wait_for_function("() => document.querySelectorAll('#queue-results td.ref').length === 1 && "
                           "document.querySelector('#queue-results td.ref').innerText === 'SUP-000001'")

    # Open a case from the queue.
    with page.expect_navigation():
        page.get_by_role("link", name="SUP-000001").click()
    assert page.url.endswith("/cases/SUP-000001/")
    assert page.get_by_role("heading", name="Refund not received").is_visible()
    assert page.locator("#comments").get_by_text("No comments yet.").is_visible()

    # Comment: it appears in place, the form is cleared, the page is not reloaded.
    page.evaluate("window.__samePage = true")
    page.get_by_placeholder("Add a comment").fill("Called the customer; refund is on its way.")
    with page.expect_response(lambda r: r.url.endswith("/comments/") and r.request.method == "POST"):
        page.get_by_role("button", name="Add comment").click()
    page.locator("#comments .comment").first.wait_for()
    assert "Called the customer; refund is on its way." in page.locator("#comments .comment").inner_text()
    assert page.get_by_placeholder("Add a comment").input_value() == ""
    assert page.evaluate("window.__samePage") is True

    comment = Comment.objects.get()
    assert comment.case.reference == "SUP-000001"
    assert comment.author.username == "alice"
    assert comment.body == "Called the customer; refund is on its way."
    assert page.js_errors == []


def test_a_bad_password_keeps_you_on_the_login_page(page, alice):
    page.goto("/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("not-her-password")
    with page.expect_navigation():
        page.get_by_role("button", name="Log in").click()
    assert "/login/" in page.url
    assert page.get_by_role("alert").inner_text().startswith("Your username and password didn't match")
