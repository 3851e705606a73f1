"""The timeline is paged (newest first, CASE_TIMELINE_PAGE entries a page, an "older" link) and
its poll reads only what is newer than what it shows: the same cost at any history size."""

from __future__ import annotations

import pytest

from audit.models import AuditEntry
from casework.cases.services import case_comment, case_create
from casework.cases.timeline import RunRow, timeline_page
from tests.cases.test_timeline import _failed_run

pytestmark = pytest.mark.django_db


def _history(case, alice, runs: int) -> None:
    for run in range(runs):
        _failed_run(case, alice, run=2000 + run)
        case_comment(actor=alice, case=case, body=f"Note {run}.")


def _ids(row) -> list[int]:
    return [e.pk for e in row.entries] if isinstance(row, RunRow) else [row.pk]


def test_walking_the_pages_shows_every_entry_once_and_every_run_whole(settings, alice):
    settings.CASE_TIMELINE_PAGE = 10
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    _history(case, alice, 12)  # 7 entries a run and its note: runs straddle the page edges
    seen, runs, before, pages = [], [], None, 0
    while True:
        page = timeline_page(case, before=before)
        pages += 1
        for row in page.rows:
            seen += _ids(row)
            if isinstance(row, RunRow):
                runs.append(row)
        if page.older is None:
            break
        assert page.older > max(_ids(page.rows[-1])) or page.older == min(min(_ids(r)) for r in page.rows)
        before = page.older
    every = list(AuditEntry.objects.filter(case_id=case.pk).values_list("id", flat=True))
    assert sorted(seen) == sorted(every) and len(seen) == len(set(seen))
    assert len(runs) == 12 and all(run.status == "completed_with_errors" and len(run.calls) == 2 for run in runs)
    assert pages >= 5  # 96 entries, 10 a page (more where a page reaches down to a run's start)
    newest_first = [min(_ids(r)) for r in timeline_page(case).rows]
    assert newest_first == sorted(newest_first, reverse=True)


def test_the_people_filter_pages_over_people_only(settings, alice):
    settings.CASE_TIMELINE_PAGE = 5
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    _history(case, alice, 6)
    page = timeline_page(case, show="people")
    # each run was queued by alice, then she wrote a note: people's entries only, newest first
    assert [(e.action, e.data.get("body")) for e in page.rows] == [
        ("case.commented", "Note 5."), ("agent.run_queued", None), ("case.commented", "Note 4."),
        ("agent.run_queued", None), ("case.commented", "Note 3.")]
    rest = timeline_page(case, show="people", before=page.older)
    assert all(e.actor == "alice" for e in rest.rows) and rest.rows[0].data.get("body") is None


def test_the_poll_answers_204_until_something_newer_is_written(alice_client, alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    _history(case, alice, 2)
    url = f"/cases/{case.reference}/timeline/"
    newest = AuditEntry.objects.filter(case_id=case.pk).latest("id").pk
    assert alice_client.get(url, {"after": newest}, HTTP_HX_REQUEST="true").status_code == 204
    case_comment(actor=alice, case=case, body="Called the bank again.")
    fresh = alice_client.get(url, {"after": newest}, HTTP_HX_REQUEST="true")
    newer = AuditEntry.objects.filter(case_id=case.pk).latest("id").pk
    assert fresh.status_code == 200 and f"after={newer}" in fresh.content.decode()
    assert alice_client.get(url, {"after": newer}, HTTP_HX_REQUEST="true").status_code == 204


def test_the_older_link_brings_the_next_page_in_its_place(settings, alice_client, alice):
    settings.CASE_TIMELINE_PAGE = 10
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    _history(case, alice, 4)
    first = timeline_page(case)
    older = alice_client.get(f"/cases/{case.reference}/timeline/", {"before": first.older}, HTTP_HX_REQUEST="true")
    body = older.content.decode()
    assert older.status_code == 200 and "timeline-box" not in body and "<details" in body
    assert f'data-run="{2000 + 3}"' not in body  # the newest run stays on the first page


@pytest.mark.parametrize("field", ["before", "after"])
def test_a_bad_cursor_is_a_400_naming_it(alice_client, alice, field):
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    response = alice_client.get(f"/cases/{case.reference}/timeline/", {field: "12x"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400 and field in response.content.decode()
    if field == "before":  # the page's own "older" link without htmx
        assert alice_client.get(f"/cases/{case.reference}/", {field: "-1"}).status_code == 400


@pytest.mark.parametrize("runs", [3, 30])
def test_page_and_poll_cost_the_same_queries_at_any_history(runs, alice_client, alice,
                                                            django_assert_max_num_queries):
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    _history(case, alice, runs)
    url = f"/cases/{case.reference}/timeline/"
    alice_client.get(url, HTTP_HX_REQUEST="true")  # warm the session and roles
    # session, user, roles, the case, the cases merged into it, the entries (a page, then
    # down to a cut run's start), the header's assignee
    with django_assert_max_num_queries(8):
        page = alice_client.get(url, HTTP_HX_REQUEST="true")
    assert page.content.decode().count("<details") <= 8  # 50 entries a page, 7 a run and note
    newest = AuditEntry.objects.filter(case_id=case.pk).latest("id").pk
    # session, user, roles, the case, the cases merged into it, one look for anything newer
    with django_assert_max_num_queries(6):
        assert alice_client.get(url, {"after": newest}, HTTP_HX_REQUEST="true").status_code == 204
