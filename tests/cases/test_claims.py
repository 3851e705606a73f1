"""A claim rests on a fact (issue 43): every state whose label says something happened outside
Casework ("Reply sent", "Assessed", "notified") declares the record of that effect beside its
lifecycle table, /lifecycles/ shows it, and the one transition service refuses to enter such a
state without that record."""

from __future__ import annotations

import pytest
from django.utils.html import escape

from casework.cases.checks import lifecycle_claims_check
from casework.cases.lifecycle import PERSON, SYSTEM, Fact, Lifecycle, State, claims_without_fact, lifecycles, move
from casework.cases.lifecycle.table import claimed_words
from casework.errors import Conflict

ALL = lifecycles()


@pytest.mark.parametrize("lifecycle", ALL, ids=[lc.key for lc in ALL])
def test_every_state_that_claims_an_outside_effect_names_its_fact(lifecycle: Lifecycle):
    assert claims_without_fact(lifecycle) == []


def test_the_system_check_is_clean_for_the_registered_lifecycles():
    assert lifecycle_claims_check() == []


def _broken(fact: Fact | None = None, claim: str = "") -> Lifecycle:
    return Lifecycle(
        key="broken", label="A deliberately broken table", record="cases.Case", field="status", initial="open",
        audit_action="broken.moved",
        states=(State("open", "Open", "Nothing happened yet."),
                State("told", "Customer notified", "We told the customer.", claim=claim, fact=fact)),
        transitions=tuple(move("open", "told", PERSON, SYSTEM)))


def test_a_state_whose_label_claims_an_effect_without_a_fact_is_found_by_the_scan_and_the_check(monkeypatch):
    broken = _broken()
    [problem] = claims_without_fact(broken)
    assert "broken.told ('Customer notified')" in problem and "'notified'" in problem and "no fact" in problem
    # Registered, the system check (manage.py check, the deploy check) refuses it too.
    from casework.cases.lifecycle import table

    monkeypatch.setitem(table._REGISTRY, "broken", broken)
    [error] = [e for e in lifecycle_claims_check() if "broken." in e.msg]
    assert error.id == "cases.E002" and "broken.told" in error.msg
    # With its claim and its fact, it passes.
    fixed = _broken(Fact("outbox.OutboundEmail", "the mail server accepted the e-mail"), claim="the customer was told")
    assert claims_without_fact(fixed) == []


@pytest.mark.parametrize(("label", "claims"), [
    ("Reply sent", ["sent"]), ("Assessed", ["assessed"]), ("Promoted", ["promoted"]),
    ("Reply drafted, not sent", []), ("Being assessed", []), ("Reply not delivered", []),
    ("Reply written, email queued", []), ("Awaiting User Response", []),
])
def test_claim_words_are_read_as_a_person_reads_the_label(label, claims):
    assert claimed_words(label) == claims


@pytest.mark.django_db
def test_the_transition_service_refuses_a_claim_state_without_its_record_and_takes_it_with_one(alice):
    from audit.models import AuditEntry
    from casework.cases.lifecycle.services import lifecycle_transition
    from casework.cases.services import case_create
    from casework.outbox.models import OutboundEmail

    sent = Fact("outbox.OutboundEmail", "the mail server accepted the e-mail", holds=lambda e: e.state == "sent")
    table = Lifecycle(
        key="claims_demo", label="Claims demo", record="cases.Case", field="status", initial="new",
        audit_action="claims_demo.moved",
        states=(State("new", "New", "Opened."), State("in_progress", "Customer notified", "Told.",
                                                      claim="the customer got our e-mail", fact=sent)),
        transitions=tuple(move("new", "in_progress", PERSON, SYSTEM)))
    case = case_create(actor=alice, case_type="support_ticket", title="A claim", description="")
    email = OutboundEmail.objects.create(purpose="support.reply", to="a@example.net", subject="s", body="b",
                                         message_id="<m1@casework.test>", case=case)
    for fact, why in ((None, "no outbox.OutboundEmail record was given"),
                      (case, "Case is not a outbox.OutboundEmail record"),
                      (email, "does not show it")):
        with pytest.raises(Conflict, match=why) as refused:
            lifecycle_transition(actor="system", lifecycle=table, record=case, to="in_progress", fact=fact)
        assert refused.value.code == "no_fact"
    case.refresh_from_db()
    assert case.status == "new"
    OutboundEmail.objects.filter(pk=email.pk).update(state="sent")
    email.refresh_from_db()
    lifecycle_transition(actor="system", lifecycle=table, record=case, to="in_progress", fact=email)
    case.refresh_from_db()
    assert case.status == "in_progress"
    entry = AuditEntry.objects.get(action="claims_demo.moved")
    assert entry.data["fact"] == f"outbox.OutboundEmail#{email.pk}"


def test_the_page_shows_each_claim_and_the_fact_it_rests_on(alice_client):
    page = alice_client.get("/lifecycles/").content.decode()
    assert "Claim and the fact it rests on" in page
    for lifecycle in ALL:
        for state in lifecycle.claims():
            assert escape(state.fact.says) in page and f"<code>{state.fact.record}</code>" in page
    assert "Claims without a fact" not in page
