"""A release in a real browser: CI posts it, the detective files a high report, the release
manager asks the agent why (the answer appears word by word as the worker writes it), then
decides go against the report and confirms the override."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from casework.releases.models import Release
from tests.chat.fixtures import worker_thread  # noqa: F401 - fixture
from tests.releases.conftest import SEED

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.mark.usefixtures("worker_thread")
def test_a_release_arrives_the_manager_asks_the_agent_then_decides(page, log_in, api, rita, settings):
    settings.OFFLINE_STREAM_DELAY_SECONDS = 0.07  # the offline answer arrives word by word, over seconds
    response = api.post("/api/releases/", SEED, format="json")  # CI; the detective runs on commit
    assert response.status_code == 201, response.content
    reference = response.json()["reference"]

    log_in(page, "rita", "rita-pass-123", next_path=f"/cases/{reference}/")  # the release manager
    expect(page.locator("[data-severity]")).to_have_text("high")
    expect(page.locator("ul.findings")).to_contain_text("test_refund_flow")

    page.get_by_role("tab", name="Ask the agent").click()
    page.get_by_label("Your question").fill("Why this severity?")
    page.get_by_role("button", name="Ask").click()
    answering = page.locator('.chat-assistant[data-status="answering"]')
    expect(answering).to_contain_text("Still answering")
    expect(answering.locator(".chat-content")).to_contain_text("The release is rated")  # before it is complete
    expect(page.get_by_role("button", name="Ask")).to_be_disabled()
    done = page.locator('.chat-assistant[data-status="done"]')
    # The stream takes as long as its words at 0.07 s each (several seconds, longer on a busy
    # machine): wait for its end with room to spare, not the default 5 s.
    expect(done).to_contain_text("The release is rated high because:", timeout=60_000)
    expect(done).to_contain_text("test_refund_flow")
    expect(page.get_by_role("button", name="Ask")).to_be_enabled()
    expect(page.locator(".conversation-info")).to_contain_text("2 messages")

    decision = page.locator("#release-decide")
    decision.get_by_label("Go", exact=True).check()
    decision.get_by_label("Reason").fill("The refund fix ships behind a flag.")
    decision.get_by_role("button", name="Decide").click()
    expect(page.locator("#release-decide")).to_contain_text("Confirm to decide against the report")
    page.locator("#release-decide").get_by_label("I decide against the risk report").check()
    page.locator("#release-decide").get_by_role("button", name="Decide").click()
    expect(page.locator("#decision")).to_contain_text("Release approved")
    expect(page.locator("#decision .badge-warn")).to_have_text("override")

    case = Release.objects.get(release_id=SEED["release_id"]).case
    assert case.status == "closed" and case.decisions.get().data["override"] is True
    assert page.js_errors == []
