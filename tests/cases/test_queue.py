"""The investigator's pages: the queue (filters, search, sort, pages, htmx fragments,
assign to me) and the case page (header, comments, decision, timeline)."""

from __future__ import annotations

import re

import pytest

from audit.models import AuditEntry
from casework.cases.models import Case, Comment, Decision
from casework.cases.services import case_assign, case_close, case_comment, case_create

pytestmark = pytest.mark.django_db

# session, user, roles, count, one page of cases with assignees, plus what the navigation
# reads (pinned saved views, unread count, teams, investigators for the assignee filter and the
# bulk bar) when its cache is cold: a ceiling well below one query per row.
QUEUE_QUERIES = 9  # 5 once the navigation is cached (tests/cases/test_navigation.py)
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "queue-results"}


def make_case(actor, **kwargs):
    return case_create(actor=actor, case_type=kwargs.pop("case_type", "fraud_alert"),
                       title=kwargs.pop("title", "Deposit cycling"), **kwargs)


@pytest.fixture
def cases(alice, ivan):
    fra1 = make_case(alice, title="Deposit cycling", priority="low")
    fra2 = make_case(alice, title="Shared device ring", priority="critical")
    sup = make_case(alice, case_type="support_ticket", title="Refund not received", priority="high")
    acc = make_case(alice, case_type="access_change", title="Payroll write access", priority="medium")
    case_assign(actor=alice, case=fra2, assignee=alice)
    case_assign(actor=alice, case=sup, assignee=ivan)
    return {"fra1": fra1, "fra2": fra2, "sup": sup, "acc": acc}


def listed(response) -> list[str]:
    """References in the queue table, in the order shown."""
    assert response.status_code == 200
    return re.findall(r'<td class="ref"><a href="/cases/[^"]+/">([A-Z]{3}-\d{6})</a>', response.content.decode())


# --- queue -------------------------------------------------------------------------------

def test_the_queue_lists_cases_newest_first(alice_client, cases):
    response = alice_client.get("/cases/")
    assert listed(response) == ["ACC-000001", "SUP-000001", "FRA-000002", "FRA-000001"]
    html = response.content.decode()
    assert "<html" in html and "Case queue" in html
    assert "Shared device ring" in html
    assert 'class="badge badge-priority-critical"' in html
    assert 'class="badge badge-status-in_progress"' in html
    assert "4 cases" in html


@pytest.mark.parametrize(("params", "expected"), [
    ({"case_type": "fraud_alert"}, ["FRA-000002", "FRA-000001"]),
    ({"status": "new"}, ["ACC-000001", "FRA-000001"]),
    ({"priority": "critical"}, ["FRA-000002"]),
    ({"assignee": "ivan"}, ["SUP-000001"]),
    ({"assignee": "none"}, ["ACC-000001", "FRA-000001"]),
    ({"case_type": "fraud_alert", "status": "new"}, ["FRA-000001"]),
])
def test_the_queue_filters(alice_client, cases, params, expected):
    assert listed(alice_client.get("/cases/", params)) == expected


def test_the_queue_searches_reference_and_title(alice_client, cases):
    assert listed(alice_client.get("/cases/", {"q": "sup-000001"})) == ["SUP-000001"]
    assert listed(alice_client.get("/cases/", {"q": "DEVICE"})) == ["FRA-000002"]
    response = alice_client.get("/cases/", {"q": "no such case"})
    assert listed(response) == []
    assert b"No cases match these filters." in response.content


def test_a_phrase_with_a_space_searches_titles_only(alice_client, cases):
    """No reference holds a space: the query reads one trigram index, not two OR-ed."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    title = Case.objects.get(reference="FRA-000002").title
    phrase = " ".join(title.split()[:2])
    with CaptureQueriesContext(connection) as queries:
        assert "FRA-000002" in listed(alice_client.get("/cases/", {"q": phrase}))
    searches = [q["sql"] for q in queries.captured_queries if "LIKE" in q["sql"]]
    assert searches and all('"reference"' not in sql.split("WHERE", 1)[1].split("ORDER BY")[0] for sql in searches)
    with CaptureQueriesContext(connection) as queries:
        listed(alice_client.get("/cases/", {"q": "000002"}))  # a fragment: reference and title
    assert any('"reference"' in q["sql"] and "LIKE" in q["sql"] for q in queries.captured_queries)


def test_the_queue_sorts_by_priority(alice_client, cases):
    assert listed(alice_client.get("/cases/", {"ordering": "priority"})) == [
        "FRA-000002", "SUP-000001", "ACC-000001", "FRA-000001"]
    assert listed(alice_client.get("/cases/", {"ordering": "-priority"}))[0] == "FRA-000001"


def test_the_queue_keeps_the_chosen_filters_in_its_form(alice_client, cases):
    html = alice_client.get("/cases/", {"status": "new", "q": "pay"}).content.decode()
    assert re.search(r'<option value="new" selected>', html)
    assert 'value="pay"' in html


def test_a_bad_filter_value_is_named_on_the_page_and_the_queue_still_lists(alice_client, cases):
    response = alice_client.get("/cases/", {"status": "sleeping", "page": "x"})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'role="alert"' in html and "status: Select a valid choice" in html
    assert "FRA-000001" in html


def test_an_over_long_search_is_named_on_the_page_and_in_the_htmx_fragment(alice_client, cases):
    response = alice_client.get("/cases/", {"q": "x" * 101})
    assert response.status_code == 400 and "q: Ensure this value has at most 100 characters" in response.content.decode()
    fragment = alice_client.get("/cases/", {"q": "x" * 101}, **HTMX)
    assert fragment.status_code == 200 and "q: Ensure this value" in fragment.content.decode()


def test_a_pasted_full_reference_finds_that_case(alice_client, cases):
    assert listed(alice_client.get("/cases/", {"q": " fra-000002 "})) == ["FRA-000002"]


def test_the_queue_paginates_by_25(alice_client, alice):
    for i in range(30):
        make_case(alice, title=f"Case number {i}")
    first = alice_client.get("/cases/")
    assert len(listed(first)) == 25
    assert "page 1 of 2" in first.content.decode()
    second = alice_client.get("/cases/", {"page": 2})
    assert listed(second) == ["FRA-000005", "FRA-000004", "FRA-000003", "FRA-000002", "FRA-000001"]
    assert "← Previous" in second.content.decode()


def test_pager_links_keep_the_filters(alice_client, alice):
    for i in range(26):
        make_case(alice, title=f"Case {i}", priority="high")
    html = alice_client.get("/cases/", {"priority": "high"}).content.decode()
    assert 'href="?priority=high&amp;page=2"' in html


def test_an_htmx_request_gets_only_the_results_fragment(alice_client, cases):
    response = alice_client.get("/cases/", {"case_type": "support_ticket"}, **HTMX)
    html = response.content.decode()
    assert listed(response) == ["SUP-000001"]
    assert "<html" not in html and "<form id=\"queue-filters\"" not in html
    assert '<table class="queue' in html


def test_the_queue_issues_a_fixed_number_of_queries(alice_client, alice, ivan, django_assert_max_num_queries):
    """The same count for 5 cases as for 60 (a full page of 25): nothing is fetched per row."""

    def add_cases(n):
        for i in range(n):
            case = make_case(alice, title=f"Case {i}", case_type=["fraud_alert", "support_ticket"][i % 2])
            if i % 3 == 0:
                case_assign(actor=alice, case=case, assignee=[alice, ivan][i % 2])

    def count_queries(params=None, **headers) -> int:
        with django_assert_max_num_queries(QUEUE_QUERIES) as captured:
            response = alice_client.get("/cases/", params or {}, **headers)
        assert response.status_code == 200
        return len(captured)

    alice_client.get("/cases/")  # warm the session
    add_cases(5)
    with_5 = count_queries()
    with_5_htmx = count_queries({"ordering": "priority"}, **HTMX)
    add_cases(55)
    assert count_queries() == with_5
    assert count_queries({"ordering": "priority"}, **HTMX) == with_5_htmx
    assert len(listed(alice_client.get("/cases/"))) == 25


# --- assign to me ------------------------------------------------------------------------

def test_assign_to_me_over_htmx_returns_the_updated_row(alice_client, alice, cases):
    case = cases["acc"]
    response = alice_client.post(f"/cases/{case.reference}/assign-to-me/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.strip().startswith(f'<tr id="case-row-{case.pk}"')
    assert "<html" not in html
    assert ">alice<" in html
    assert "Assign to me" not in html
    assert 'badge-status-in_progress' in html
    case.refresh_from_db()
    assert case.assignee == alice
    assert AuditEntry.objects.filter(case_id=case.pk, action="case.assigned", actor="alice").exists()


def test_assign_to_me_without_htmx_goes_to_the_case(alice_client, alice, cases):
    response = alice_client.post(f"/cases/{cases['fra1'].reference}/assign-to-me/")
    assert response.status_code == 302
    assert response["Location"] == f"/cases/{cases['fra1'].reference}/"
    cases["fra1"].refresh_from_db()
    assert cases["fra1"].assignee == alice


def test_assign_to_me_on_a_closed_case_says_why(alice_client, alice, cases):
    case = cases["acc"]
    case_close(actor=alice, case=case, outcome="accepted", reason="ok")
    response = alice_client.post(f"/cases/{case.reference}/assign-to-me/", follow=True)
    assert b"is closed; it can no longer change" in response.content
    case.refresh_from_db()
    assert case.assignee is None


def test_assign_to_me_needs_a_post(alice_client, cases):
    assert alice_client.get(f"/cases/{cases['acc'].reference}/assign-to-me/").status_code == 405


# --- case page ---------------------------------------------------------------------------

def test_the_case_page_shows_the_whole_case(alice_client, alice, ivan, cases):
    case = cases["sup"]
    case_comment(actor=ivan, case=case, body="Customer called back.")
    case_close(actor=ivan, case=case, outcome="replied", reason="Refund sent.")
    response = alice_client.get(f"/cases/{case.reference.lower()}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "SUP-000001 · Support ticket" in html
    assert "<h1>Refund not received</h1>" in html
    assert 'badge-status-closed' in html and 'badge-priority-high' in html
    assert "Assignee: <strong>ivan</strong>" in html
    assert "Customer called back." in html
    assert "<strong>Replied</strong>" in html and "Refund sent." in html
    timeline = html[html.index('id="timeline"'):]
    for summary in ("case: created", "case: assigned", "case: commented", "case: closed"):
        assert summary in timeline
    assert "Close case" not in html and "Assign to me" not in html


def test_an_open_case_offers_the_close_form_and_assign(alice_client, cases):
    html = alice_client.get(f"/cases/{cases['fra1'].reference}/").content.decode()
    assert "Close case" in html
    assert '<option value="confirmed_fraud">Confirmed fraud</option>' in html
    assert "Assign to me" in html
    assert "No comments yet." in html


def test_an_unknown_case_is_a_404_page(alice_client, db):
    response = alice_client.get("/cases/FRA-404404/")
    assert response.status_code == 404
    assert b"Not found" in response.content


def test_the_timeline_fragment_renders_alone(alice_client, cases):
    response = alice_client.get(f"/cases/{cases['fra2'].reference}/timeline/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert "case: assigned" in html and "→ alice" in html


def test_adding_a_comment(alice_client, alice, cases):
    case = cases["fra1"]
    response = alice_client.post(f"/cases/{case.reference}/comments/", {"body": "Checked the device."})
    assert response.status_code == 302
    assert Comment.objects.get(case=case).body == "Checked the device."
    assert AuditEntry.objects.filter(case_id=case.pk, action="case.commented").exists()
    assert "Checked the device." in alice_client.get(response["Location"]).content.decode()


def test_adding_a_comment_over_htmx_returns_the_comments(alice_client, cases):
    case = cases["fra1"]
    response = alice_client.post(f"/cases/{case.reference}/comments/", {"body": "Line one\nline two"},
                                 HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.strip().startswith('<section id="comments">')
    assert "<html" not in html
    assert "Line one<br>line two" in html
    assert '<textarea name="body"' in html and "Line one</textarea>" not in html


def test_an_empty_comment_over_htmx_shows_the_error(alice_client, cases):
    response = alice_client.post(f"/cases/{cases['fra1'].reference}/comments/", {"body": "  "},
                                 HTTP_HX_REQUEST="true")
    assert b"This field is required." in response.content
    assert not Comment.objects.exists()


def test_an_empty_comment_without_htmx_says_so(alice_client, cases):
    response = alice_client.post(f"/cases/{cases['fra1'].reference}/comments/", {"body": ""}, follow=True)
    assert b"This field is required." in response.content
    assert not Comment.objects.exists()


def test_closing_through_the_page(alice_client, alice, cases):
    case = cases["fra1"]
    response = alice_client.post(f"/cases/{case.reference}/close/",
                                 {"outcome": "confirmed_fraud", "reason": "Mule device"}, follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert f"{case.reference} closed." in html
    assert "<strong>Confirmed fraud</strong>" in html
    decision = Decision.objects.get(case=case)
    assert decision.decided_by == alice and decision.reason == "Mule device"


def test_a_second_close_through_the_page_says_who_closed_it(alice_client, ivan, cases):
    case = cases["fra1"]
    case_close(actor=ivan, case=case, outcome="legit", reason="Known customer")
    response = alice_client.post(f"/cases/{case.reference}/close/",
                                 {"outcome": "confirmed_fraud", "reason": "Mule device"}, follow=True)
    html = response.content.decode()
    assert "already closed by ivan" in html
    assert "flash-error" in html
    assert Decision.objects.filter(case=case).count() == 1
    assert Decision.objects.get(case=case).outcome == "legit"


def test_closing_without_a_reason_shows_the_form_again(alice_client, cases):
    case = cases["fra1"]
    response = alice_client.post(f"/cases/{case.reference}/close/", {"outcome": "legit", "reason": ""})
    assert response.status_code == 400
    assert b"This field is required." in response.content
    case.refresh_from_db()
    assert case.status == Case.Status.NEW


def test_closing_with_a_bad_outcome_shows_the_form_again(alice_client, cases):
    response = alice_client.post(f"/cases/{cases['fra1'].reference}/close/", {"outcome": "go", "reason": "r"})
    assert response.status_code == 400
    assert b"Select a valid choice" in response.content


# --- untrusted text is escaped -----------------------------------------------------------

def test_a_hostile_title_and_comment_are_escaped(alice_client, alice):
    case = make_case(alice, title="<script>alert(1)</script>",
                     description="<img src=x onerror=alert(2)>")
    case_comment(actor=alice, case=case, body="<b>bold</b><script>alert(3)</script>")
    for url in ("/cases/", f"/cases/{case.reference}/"):
        html = alice_client.get(url).content.decode()
        assert "<script>alert(" not in html, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, url
    html = alice_client.get(f"/cases/{case.reference}/").content.decode()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "<b>bold</b>" not in html


def test_a_hostile_title_is_escaped_in_the_htmx_row(alice_client, alice):
    case = make_case(alice, title="<script>alert(1)</script>")
    html = alice_client.post(f"/cases/{case.reference}/assign-to-me/", HTTP_HX_REQUEST="true").content.decode()
    assert "<script>" not in html and "&lt;script&gt;" in html
