"""Full e-mail addresses and card numbers are special-category (issue 41): whole for the teams
owning the case's type, masked for everyone else who sees the case (an admin outside the
team, a person from another team named on a restricted case), on pages and in the API."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from casework.cases import services
from casework.cases.attachments.services import attachment_upload
from casework.cases.masking import masked_for
from casework.cases.restriction import case_restrict
from casework.people.roles import ADMIN, INVESTIGATOR
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set

pytestmark = pytest.mark.django_db

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
ADDRESS = "jane.doe@example.com"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def people(db):
    support = team_create(actor="system", name="Support", case_types=["support_ticket"])
    fraud = team_create(actor="system", name="Fraud", case_types=["fraud_alert"])
    p = {name: user_create(actor="system", username=name, password=f"{name}-pass-123", role=INVESTIGATOR)
         for name in ("sam", "fred")}
    team_member_set(actor="system", team=support, user=p["sam"], role="lead")
    team_member_set(actor="system", team=fraud, user=p["fred"])
    p["root"] = user_create(actor="system", username="root", password="root-pass-123", role=ADMIN)
    return p


@pytest.fixture
def ticket(people):
    case = services.case_create(actor=people["sam"], case_type="support_ticket", title="Double charge")
    attachment_upload(actor="system", case=case, upload=SimpleUploadedFile("invoice.pdf", PDF),
                      received_from=ADDRESS)
    return case


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_owning_team_sees_the_senders_address_whole(client, people, ticket):
    client.force_login(people["sam"])
    assert f"by email from {ADDRESS}" in client.get(f"/cases/{ticket.reference}/").content.decode()
    files = _api(people["sam"]).get(f"/api/cases/{ticket.reference}/attachments/").json()
    assert files[0]["received_from"] == ADDRESS


def test_an_admin_outside_the_team_sees_it_masked(client, people, ticket):
    client.force_login(people["root"])
    page = client.get(f"/cases/{ticket.reference}/").content.decode()
    assert "by email from j***@example.com" in page and ADDRESS not in page
    files = _api(people["root"]).get(f"/api/cases/{ticket.reference}/attachments/").json()
    assert files[0]["received_from"] == "j***@example.com"


def test_a_named_person_from_another_team_sees_it_masked(client, people, ticket):
    case_restrict(actor=people["sam"], case=ticket, people=[people["fred"]], reason="Fraud is involved")
    client.force_login(people["fred"])
    page = client.get(f"/cases/{ticket.reference}/").content.decode()
    assert "by email from j***@example.com" in page and ADDRESS not in page


def test_a_card_number_is_whole_for_the_team_and_its_bin_and_last_four_for_the_rest(people):
    team_member_set(actor="system", team=team_create(actor="system", name="Cards", case_types=["fraud_alert"]),
                    user=people["sam"])
    sam = type(people["sam"]).objects.get(pk=people["sam"].pk)
    assert masked_for(sam, "fraud_alert", "card", "4111 1111 1111 1111") == "4111 1111 1111 1111"
    assert masked_for(people["root"], "fraud_alert", "card", "4111 1111 1111 1111") == "411111…1111"
    assert masked_for(people["root"], "fraud_alert", "card", "not a card") == "card number withheld"
    assert masked_for(None, "support_ticket", "email", ADDRESS) == "j***@example.com"
