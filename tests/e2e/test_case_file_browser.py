"""The case file in a real browser: a task added and done, evidence uploaded and a refused type
named, and the timeline's filter with a folded agent run that opens."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from casework.cases.attachments.models import Attachment
from casework.cases.services import case_create
from casework.cases.tasks.models import Task
from tests.fraud.conftest import CYCLING

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_a_task_from_the_template_and_one_typed_in_are_done(page, log_in, alice, ivan):
    case = case_create(actor=alice, case_type="access_change", title="Access level for Jan")
    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{case.reference}/")
    page.get_by_role("tab", name="Tasks").click()
    tasks = page.locator("#case-tasks")
    expect(tasks.get_by_text("No tasks yet.")).to_be_visible()

    tasks.get_by_role("button", name=re.compile(r"Add tasks from template \(3\)")).click()
    expect(tasks.get_by_text("Confirm the change with the employee's manager")).to_be_visible()
    expect(tasks.get_by_text("0 of 3 done")).to_be_visible()

    tasks.get_by_label("Task").fill("Ask HR for the sick-leave record")
    tasks.get_by_label("Assignee", exact=True).select_option("ivan")
    tasks.get_by_role("button", name="Add task").click()
    new = tasks.locator("li.task", has_text="Ask HR for the sick-leave record")
    expect(new).to_contain_text("assigned to ivan")

    new.get_by_role("button", name="Mark done").click()
    new = page.locator("#case-tasks li.task", has_text="Ask HR for the sick-leave record")
    expect(new).to_contain_text("done by alice")
    expect(page.locator("#case-tasks").get_by_text("1 of 4 done")).to_be_visible()
    done = Task.objects.get(case=case, title="Ask HR for the sick-leave record")
    assert done.done and done.done_by == alice and done.assignee == ivan
    # the tab stayed open throughout: every swap was in place
    expect(page.locator("#tab-tasks")).to_be_visible()


def test_evidence_is_uploaded_and_a_refused_type_is_named(page, log_in, alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Deposit-withdraw cycling")
    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{case.reference}/")
    page.get_by_role("tab", name="Evidence").click()
    evidence = page.locator("#case-evidence")

    evidence.get_by_label("Evidence file").set_input_files(
        {"name": "bank statement.pdf", "mimeType": "application/pdf", "buffer": PDF})
    evidence.get_by_role("button", name="Upload").click()
    attachment_row = page.locator("#case-evidence table tr", has_text="bank statement.pdf")
    expect(attachment_row).to_contain_text("alice")
    expect(attachment_row).to_contain_text(Attachment.objects.get(case=case).sha256[:12])

    page.locator("#case-evidence").get_by_label("Evidence file").set_input_files(
        {"name": "invoice.exe", "mimeType": "application/x-msdownload", "buffer": b"MZ\x90\x00" + b"\x00" * 60})
    page.locator("#case-evidence").get_by_role("button", name="Upload").click()
    expect(page.locator("#case-evidence [role=alert]")).to_have_text(re.compile(
        r"^Refused: \.exe files are not accepted\. Accepted: \.pdf"))
    assert Attachment.objects.count() == 1

    # the link downloads the file as it was uploaded
    with page.expect_download() as download:
        page.locator("#case-evidence").get_by_role("link", name="bank statement.pdf").click()
    with open(download.value.path(), "rb") as f:
        assert f.read() == PDF
    assert download.value.suggested_filename == "bank statement.pdf"


def test_the_timeline_folds_a_run_and_filters_people_and_agents(page, log_in, alice):
    from casework.cases.services import case_comment
    from casework.fraud.services import alert_create

    case = alert_create(actor=alice, data=CYCLING).case  # the offline pipeline runs (eager, committed)
    case_comment(actor=alice, case=case, body="Called the bank.")
    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{case.reference}/")
    timeline = page.locator("#timeline-box")
    run = timeline.locator("li.timeline-run")
    expect(run).to_have_count(1)
    expect(run.locator("summary")).to_contain_text(re.compile(r"Run \(alert creation\): completed in .* · 6 calls"))
    expect(run.get_by_text("agent: call completed").first).to_be_hidden()
    run.locator("summary").click()
    expect(run.get_by_text("agent: call completed").first).to_be_visible()
    expect(timeline.get_by_text("case: commented")).to_be_visible()
    # the next poll, with something new to show, swaps the whole box: the opened run stays open.
    # (With nothing new the poll is answered 204 and nothing is swapped.) The box shown before
    # is marked, so that the check reads the new box (the old one was open already), once there.
    case_comment(actor=alice, case=case, body="Called the bank again.")
    page.evaluate("document.getElementById('timeline-box').dataset.beforeSwap = 'yes'")
    with page.expect_response(lambda r: "/timeline/" in r.url):
        page.evaluate("htmx.ajax('GET', document.getElementById('timeline-box').getAttribute('hx-get'), "
                      "{target: '#timeline-box', swap: 'outerHTML'})")
    expect(page.locator("#timeline-box")).not_to_have_attribute("data-before-swap", "yes")  # swapped
    expect(page.locator("#timeline-box").get_by_text("case: commented")).to_have_count(2)
    expect(page.locator("#timeline-box li.timeline-run details")).to_have_attribute("open", "")

    timeline.get_by_role("button", name="People").click()
    expect(page.locator("#timeline-box li.timeline-run")).to_have_count(0)
    expect(page.locator("#timeline-box").get_by_text("case: commented")).to_have_count(2)
    expect(page).to_have_url(re.compile(r"\?timeline=people$"))
    # the poll asks for the same filter, and only for what is newer than the newest shown
    poll = parse_qs(urlsplit(page.locator("#timeline-box").get_attribute("hx-get")).query)
    assert poll["timeline"] == ["people"] and poll["after"][0].isdigit()

    page.reload()
    expect(page.locator("#timeline-box [aria-current=true]")).to_have_text("People")
    page.locator("#timeline-box").get_by_role("button", name="Agents").click()
    expect(page.locator("#timeline-box li.timeline-run")).to_have_count(1)
    expect(page.locator("#timeline-box").get_by_text("case: commented")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"\?timeline=agents$"))
