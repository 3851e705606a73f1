"""States a person can trust (issue 13): agents never resolve a case; their end state is
"Awaiting decision", which the queue filters on."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from casework.cases.models import Case
from casework.cases.services import case_create, case_set_status

pytestmark = pytest.mark.django_db


def test_an_agent_cannot_resolve_a_case(alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    with pytest.raises(ValidationError, match="Only a person can resolve"):
        case_set_status(actor="agent:orchestrator", case=case, status=Case.Status.RESOLVED)
    assert case_set_status(actor=alice, case=case, status=Case.Status.RESOLVED).status == "resolved"


def test_the_queue_filters_on_awaiting_decision(alice_client, alice):
    waiting = case_create(actor=alice, case_type="fraud_alert", title="Assessed by the agents")
    case_create(actor=alice, case_type="fraud_alert", title="Not assessed yet")
    case_set_status(actor="agent:orchestrator", case=waiting, status=Case.Status.AWAITING_DECISION)
    html = alice_client.get("/cases/", {"status": "awaiting_decision"}).content.decode()
    assert waiting.reference in html and "Not assessed yet" not in html
    assert '<option value="awaiting_decision"' in alice_client.get("/cases/").content.decode()
    assert 'badge-status-awaiting_decision">Awaiting decision' in html


def test_the_case_header_updates_live_with_the_timeline_poll(alice_client, alice, ivan):
    from casework.cases.services import case_assign, case_set_priority

    case = case_create(actor=alice, case_type="fraud_alert", title="Cycling")
    page = alice_client.get(f"/cases/{case.reference}/").content.decode()
    assert 'id="case-meta"' in page and '" hx-trigger="every 10s"' in page
    # the poll's own address: it asks only for what is newer than the page shows
    poll_url = page.split('id="timeline-box" hx-get="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert "after=" in poll_url
    # Agents and other people change the header while the page is open ...
    case_set_status(actor="agent:orchestrator", case=case, status=Case.Status.AWAITING_DECISION)
    case_set_priority(actor="agent:orchestrator", case=case, priority="critical", reason="test")
    case_assign(actor=alice, case=case, assignee=ivan)
    # ... and the next poll brings the new header along, out of band.
    poll = alice_client.get(poll_url, HTTP_HX_REQUEST="true").content.decode()
    meta = poll[poll.index('id="case-meta"'):]
    assert 'hx-swap-oob="true"' in meta
    assert "Awaiting decision" in meta and "Critical" in meta and "<strong>ivan</strong>" in meta
