"""Bulk actions from the queue: each case through the single action's service, audited per
case; a case that cannot take the action is skipped and named with the reason."""

from __future__ import annotations

import pytest

from agents.models import AgentRun
from audit.models import AuditEntry
from casework.cases.bulk import cases_bulk_apply
from casework.cases.models import Case, Decision
from casework.cases.services import case_close, case_create

pytestmark = pytest.mark.django_db


def make(actor, case_type="fraud_alert", **kw):
    return case_create(actor=actor, case_type=case_type, title=kw.pop("title", "Alert"), **kw)


@pytest.fixture
def alerts(alice):
    return [make(alice, title=f"Alert {i}") for i in range(4)]


def test_it_closes_each_case_as_a_single_close_would_and_audits_each(alice, alerts):
    refs = [c.reference for c in alerts]
    result = cases_bulk_apply(actor=alice, references=refs, action="close", outcome="false_positive",
                              reason="Known payroll batch")
    assert result.done == refs and result.skipped == []
    assert set(Decision.objects.filter(case__in=alerts).values_list("outcome", flat=True)) == {"false_positive"}
    for case in alerts:
        assert Case.objects.get(pk=case.pk).status == "closed"
        entry = AuditEntry.objects.get(case_id=case.pk, action="case.closed")
        assert entry.actor == "alice" and entry.data["reason"] == "Known payroll batch"
    summary = AuditEntry.objects.get(action="cases.bulk_applied")
    assert summary.data["done"] == refs


def test_closing_skips_what_cannot_be_closed_and_says_why(alice, alerts):
    closed, running, ok, other = alerts
    case_close(actor=alice, case=closed, outcome="legit", reason="Checked")
    AgentRun.objects.create(case=running, pipeline="fraud", status="running")
    ticket = make(alice, case_type="support_ticket", title="Refund")
    refs = [closed.reference, running.reference, ok.reference, ticket.reference, "FRA-999999"]
    result = cases_bulk_apply(actor=alice, references=refs, action="close", outcome="false_positive",
                              reason="Noise")
    assert result.done == [ok.reference]
    skipped = dict(result.skipped)
    assert skipped[closed.reference] == "already closed"
    assert skipped[running.reference] == "the agents are still working on it"
    assert "not an outcome of a support ticket" in skipped[ticket.reference]
    assert skipped["FRA-999999"] == "no such case"
    # The skipped ones are untouched: no second decision, no audit entry of a close.
    assert Decision.objects.filter(case=closed).count() == 1
    assert not AuditEntry.objects.filter(case_id=running.pk, action="case.closed").exists()
    assert Case.objects.get(pk=ticket.pk).status != "closed"


def test_it_assigns_and_sets_priority_per_case(alice, ivan, alerts):
    refs = [c.reference for c in alerts[:2]]
    result = cases_bulk_apply(actor=alice, references=refs, action="assign", assignee=ivan)
    assert result.done == refs
    assert {Case.objects.get(pk=c.pk).assignee for c in alerts[:2]} == {ivan}
    assert AuditEntry.objects.filter(action="case.assigned", case_id__in=[c.pk for c in alerts[:2]]).count() == 2
    result = cases_bulk_apply(actor=alice, references=refs, action="priority", priority="critical")
    assert result.done == refs
    assert AuditEntry.objects.filter(action="case.priority_changed", case_id__in=[c.pk for c in alerts[:2]]).count() == 2
    case = Case.objects.get(pk=alerts[0].pk)
    assert case.priority == "critical" and case.due_at is not None


@pytest.mark.parametrize("kwargs, field", [
    ({"action": "delete"}, "action"),
    ({"action": "priority", "priority": "urgent"}, "priority"),
    ({"action": "close", "outcome": "nonsense", "reason": "x"}, "outcome"),
    ({"action": "close", "outcome": "legit", "reason": "  "}, "reason"),
])
def test_bad_arguments_name_the_field(alice, alerts, kwargs, field):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as caught:
        cases_bulk_apply(actor=alice, references=[alerts[0].reference], **kwargs)
    assert field in caught.value.message_dict


# --- the page ----------------------------------------------------------------------------

def test_the_page_asks_naming_the_count_then_applies(alice_client, alice, alerts):
    refs = [c.reference for c in alerts[:3]]
    form = {"references": refs, "action": "close", "outcome": "false_positive", "reason": "Noise",
            "next": "/cases/?priority=medium"}
    response = alice_client.post("/cases/bulk/", form, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert "Close 3 cases as Dismissed as false positive?" in html
    assert not Decision.objects.exists()  # nothing happens before the confirmation
    response = alice_client.post("/cases/bulk/", {**form, "confirm": "1"})
    assert response.status_code == 302 and response["Location"] == "/cases/?priority=medium"
    assert Decision.objects.count() == 3
    page = alice_client.get(response["Location"]).content.decode()
    assert "Closed 3 cases." in page


def test_the_page_reports_skipped_cases_by_reference(alice_client, alice, alerts):
    case_close(actor=alice, case=alerts[0], outcome="legit", reason="Checked")
    form = {"references": [alerts[0].reference, alerts[1].reference], "action": "close",
            "outcome": "false_positive", "reason": "Noise", "confirm": "1"}
    response = alice_client.post("/cases/bulk/", form, follow=True)
    html = response.content.decode()
    assert "Closed 1 case." in html
    assert f"Skipped 1 case — {alerts[0].reference}: already closed." in html


def test_the_page_names_what_is_missing(alice_client, alerts):
    response = alice_client.post("/cases/bulk/", {"action": "close", "outcome": "legit", "reason": ""})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Select at least one case." in html and "reason: Give a reason" in html


def test_an_offsite_next_is_not_followed(alice_client, alerts):
    form = {"references": [alerts[0].reference], "action": "assign", "assignee": "me", "confirm": "1",
            "next": "https://evil.example/"}
    response = alice_client.post("/cases/bulk/", form)
    assert response["Location"] == "/cases/"


# --- the API -----------------------------------------------------------------------------

def test_the_api_applies_and_names_the_skipped(api, alice, alerts):
    case_close(actor=alice, case=alerts[0], outcome="legit", reason="Checked")
    response = api.post("/api/cases/bulk/", {"references": [c.reference for c in alerts[:2]], "action": "close",
                                             "outcome": "false_positive", "reason": "Noise"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json() == {"action": "close", "done": [alerts[1].reference],
                               "skipped": [{"reference": alerts[0].reference, "reason": "already closed"}]}


def test_the_api_names_a_bad_field(api, alerts):
    response = api.post("/api/cases/bulk/", {"references": [alerts[0].reference], "action": "assign",
                                             "assignee": "nobody"}, format="json")
    assert response.status_code == 400 and "assignee" in response.json()
    response = api.post("/api/cases/bulk/", {"references": [], "action": "close"}, format="json")
    assert response.status_code == 400 and "references" in response.json()
    response = api.post("/api/cases/bulk/", {"references": [alerts[0].reference], "action": "close",
                                             "outcome": "legit", "reason": ""}, format="json")
    assert response.status_code == 400 and "reason" in response.json()


def test_all_matching_takes_every_case_the_filters_match_beyond_the_page(alice_client, alice):
    alerts = [make(alice, title=f"Batch {i}") for i in range(27)]
    make(alice, case_type="support_ticket", title="Not matched")
    form = {"all_matching": "1", "references": [alerts[0].reference], "action": "close",
            "outcome": "false_positive", "reason": "Payroll batch", "next": "/cases/?case_type=fraud_alert&page=2"}
    html = alice_client.post("/cases/bulk/", form, HTTP_HX_REQUEST="true").content.decode()
    assert "Close 27 cases as Dismissed as false positive?" in html
    # The confirmation carries the references it asked about: a case arriving meanwhile is not in it.
    assert html.count('type="hidden" name="references"') == 27
    assert "Not matched" not in html
