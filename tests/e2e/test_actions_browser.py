"""An action on the case page follows its delivery and confirmation (issue 23): an investigator
confirms fraud; the page says the account freeze is requested and not delivered yet; the worker
delivers it to a real receiver (which verifies the signature); the page says delivered; core
banking posts a signed confirmation; the page says confirmed by it."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from playwright.sync_api import expect

from agents.tasks import run_pipeline
from casework.fraud.services import alert_create
from casework.outbox import tasks as outbox_tasks
from casework.outbox.models import Action
from tests.fraud.conftest import CYCLING
from tests.outbox.conftest import endpoint, receiver  # noqa: F401 - fixtures
from tests.outbox.helpers import deliver_due, signed

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_case_page_follows_an_action_from_requested_to_confirmed(page, log_in, alice, receiver, endpoint,  # noqa: F811
                                                                     live_server, monkeypatch):
    # No agents (not what this is about), and the queue holds deliveries until the "worker" below runs.
    monkeypatch.setattr(run_pipeline, "delay", lambda *args, **kwargs: None)
    monkeypatch.setattr(outbox_tasks.outbox_deliver, "delay", lambda *args, **kwargs: None)
    alert = alert_create(actor=alice, data=CYCLING)

    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{alert.case.reference}/")
    page.get_by_label("Reason").fill("Deposits leave within two days.")
    with page.expect_navigation():
        page.get_by_role("button", name="Confirm Fraud").click()
    panel = page.locator("#case-actions")
    step = panel.locator(".action-text")
    expect(step).to_have_text(re.compile(r"^Account freeze requested \d{4}-\d\d-\d\d \d\d:\d\d · not delivered yet$"))
    expect(panel.locator(".action")).to_have_attribute("data-state", "requested")

    assert deliver_due() >= 1  # the worker
    freeze = next(r for r in receiver.received if json.loads(r.body)["type"] == "fraud.account_freeze_requested")
    assert freeze.verified_by == receiver.secrets
    page.reload()
    expect(step).to_have_text(re.compile(r"^Account freeze requested .+ · delivered \d\d:\d\d$"))
    expect(panel.locator(".action")).to_have_attribute("data-state", "delivered")

    # Core banking froze the account and says so, signed with the endpoint's secret.
    action = Action.objects.get()
    body, headers = signed(receiver.secrets[0], {"status": "confirmed", "reference": "FRZ-77"})
    request = urllib.request.Request(f"{live_server.url}/api/actions/{action.event_id}/confirmation", data=body,
                                     headers={**headers, "content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - the live server
        assert answer.status == 200 and json.loads(answer.read())["state"] == "confirmed"
    page.reload()
    expect(step).to_have_text(re.compile(
        r"^Account freeze requested .+ · delivered \d\d:\d\d · confirmed by Core banking \d\d:\d\d$"))
    expect(panel).to_contain_text("Their reference: FRZ-77")
    expect(panel.locator(".action")).to_have_attribute("data-state", "confirmed")
    assert page.js_errors == []
