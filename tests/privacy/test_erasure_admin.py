"""The erasure requests' admin for a data-protection officer (issue 42): the subject's entities
are chosen by search (the entities admin's autocomplete), and the report names each case by
its own reference, the ones outside the officer's teams without a link or any content; anyone
else still meets the redaction of those references (README "Teams and need-to-know")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from casework.cases.redaction import HIDDEN, redact_hidden_references
from casework.privacy.erasure import ERASED
from casework.privacy.models import ErasureRequest
from tests.privacy.conftest import NOW, closed_case, entity


@pytest.fixture
def leo(db):
    """An investigator of the fraud team only: support tickets are outside his teams."""
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create
    from casework.people.teams import team_create, team_member_set

    user = user_create(actor="system", username="leo", password="leo-pass-123", role=INVESTIGATOR)
    team = team_create(actor="system", name="Fraud (test)", case_types=["fraud_alert"])
    team_member_set(actor="system", team=team, user=user)
    return user


@pytest.fixture
def two_tickets(support_data):
    return [closed_case("support_ticket", closed_at=NOW - timedelta(days=1)) for _ in range(2)]


def test_the_officer_finds_the_subject_by_search_and_reads_each_case_by_reference(
        two_tickets, dora, leo, client, django_capture_on_commit_callbacks):
    customer = entity("customer", "CUST-001")
    client.force_login(dora)
    found = client.get("/admin/autocomplete/", {"term": "CUST-00", "app_label": "privacy",
                                                "model_name": "erasurerequest", "field_name": "entity"})
    assert found.status_code == 200
    assert str(customer.pk) in [row["id"] for row in found.json()["results"]]

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/admin/privacy/erasurerequest/add/", {"entities": [customer.pk],
                                                                      "reason": "Asked by phone."})
    assert response.status_code == 302, response.content.decode()[:2000]
    request = ErasureRequest.objects.get()
    assert request.status == "done" and request.subjects == [[customer.pk]]

    page = client.get(f"/admin/privacy/erasurerequest/{request.pk}/change/").content.decode()
    # Dora is in no team: each case by its own reference, never one repeated label, and no link.
    for case in two_tickets:
        assert case.reference in page and f"/cases/{case.reference}/" not in page
    assert HIDDEN not in page and page.count("outside your teams: reference only") == 2
    assert ERASED in page
    # Their references are hers to read, not anyone's: leo still sees them redacted.
    text = " ".join(c.reference for c in two_tickets)
    assert redact_hidden_references(leo, text) == f"{HIDDEN} {HIDDEN}"
    assert redact_hidden_references(dora, text) == text


def test_the_add_form_names_the_field_when_no_subject_is_chosen(support_data, dora, client):
    client.force_login(dora)
    response = client.post("/admin/privacy/erasurerequest/add/", {"reason": "Asked by phone."})
    assert response.status_code == 200
    assert "Choose the entities naming the subject." in response.content.decode()
    assert not ErasureRequest.objects.exists()
