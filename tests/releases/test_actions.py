"""release.decided (issue 23): the release manager's go / no-go / deferred goes to CI as an
action, in the decision's transaction; the event arrives signed at a real receiver and matches
its documented schema, with the detective's report and whether the decision overrides it."""

from __future__ import annotations

import json

import pytest

from casework.outbox.models import Action
from tests.outbox.conftest import endpoint, receiver  # noqa: F401 - fixtures
from tests.outbox.helpers import deliver_due, validate
from tests.releases.conftest import LOW, SEED, release, submit

pytestmark = pytest.mark.django_db(transaction=True)  # the detective reads committed rows

DECIDED = "release.decided"


def _rita_api(rita):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(rita)
    return client


def test_a_no_go_goes_to_ci_with_the_report(rita, receiver, endpoint):  # noqa: F811
    made, _ = submit(release(SEED))
    report = made.reports.get()
    answer = _rita_api(rita).post(f"/api/releases/{made.release_id}/decision/",
                                  {"outcome": "no_go", "reason": "The refund flow fails."}, format="json")
    assert answer.status_code in (200, 201), answer.content
    action = Action.objects.get()
    assert (action.type, action.label, action.requested_by) == (DECIDED, "Release decision", rita)
    deliver_due()  # (these tests commit: the decision's commit already sent it, eagerly)
    body = next(json.loads(r.body) for r in receiver.received if json.loads(r.body)["type"] == DECIDED)
    assert all(r.verified_by == receiver.secrets for r in receiver.received)
    validate(body)
    assert body["data"]["release"] == {"release_id": made.release_id, "version": "v2.1.0"}
    assert body["data"]["report"] == {"report_id": report.report_id, "severity": report.severity,
                                      "override": report.severity == "low"}
    assert body["data"]["decision"]["outcome"] == "no_go" and body["data"]["decision"]["decided_by"] == "rita"
    action.refresh_from_db()
    assert action.state == "delivered"


def test_each_outcome_is_sent_and_an_override_says_so(rita, rita_client):
    low, _ = submit(release(LOW))
    assert low.reports.get().severity == "low"
    rita_client.post(f"/releases/{low.release_id}/decide/",
                     {"outcome": "no_go", "reason": "Freeze week.", "confirm_override": "1"})
    deferred, _ = submit(release(SEED, release_id="rel-def"))
    rita_client.post(f"/releases/{deferred.release_id}/decide/", {"outcome": "deferred", "reason": "Wait."})
    sent = {a.case_id: a.event.payload["data"] for a in Action.objects.select_related("event")}
    assert sent[low.case_id]["report"]["override"] is True and sent[low.case_id]["decision"]["outcome"] == "no_go"
    assert sent[deferred.case_id]["decision"]["outcome"] == "deferred"
    for data in sent.values():
        validate({"id": "evt_x", "type": DECIDED, "version": 1, "timestamp": "2026-11-25T14:02:00+00:00",
                  "data": data})
