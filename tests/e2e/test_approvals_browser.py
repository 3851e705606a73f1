"""Issue 46 in a real browser: the access agent waits to e-mail the employee; the investigator
sees it on the case page's approvals panel, edits the subject and approves; the run resumes
and the request goes out once, with the edited subject. Then /approvals/ is empty."""

from __future__ import annotations

import json

import pytest

from agents.models import AgentRun, RunPause
from casework.access.models import InfoRequest
from tests.access import conftest as access

# The access tests' organisation (Mona manages Priya, Kees is on sick leave ...) as fixtures here.
mark, org, submit, inbox = access.mark, access.org, access.submit, access.inbox

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_investigator_edits_and_approves_the_agents_email_from_the_case_page(page, log_in, settings, org,
                                                                                 submit, alice):
    settings.AGENT_APPROVALS = {"send_notification": {"*": "always"}}
    mutation = submit()
    pause = RunPause.objects.get()
    assert pause.status == "pending" and InfoRequest.objects.count() == 0

    log_in(page, "alice", "alice-pass-123")
    page.goto("/approvals/")
    row = page.locator(f"#approval-{pause.pk}")
    assert row.get_by_text("send_notification").is_visible()
    with page.expect_navigation():
        row.get_by_role("link", name=mutation.case.reference).click()

    panel = page.locator(f"#approvals #approval-{pause.pk}")
    assert panel.get_by_text("access_request_info").is_visible()
    arguments = json.loads(panel.locator("textarea[name=arguments]").input_value())
    assert arguments == pause.arguments
    edited = {**arguments, "subject": "Edited in the browser: please explain your change"}
    panel.locator("textarea[name=arguments]").fill(json.dumps(edited))
    with page.expect_navigation():
        panel.get_by_role("button", name="Approve").click()

    assert page.get_by_text("send_notification approved; the run goes on from that step.").is_visible()
    assert page.locator("#approvals").get_by_text("Nothing waits for an approval.").is_visible()
    assert page.locator("#approvals .approval-answered").get_by_text("approved by alice").is_visible()
    request = InfoRequest.objects.get()
    assert request.subject == edited["subject"]
    assert AgentRun.objects.get(case=mutation.case, mode="investigate").status == AgentRun.Status.WAITING
    page.goto("/approvals/")
    assert page.get_by_text("Nothing waits for an approval.").is_visible()
    assert not page.js_errors
