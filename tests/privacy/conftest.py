"""Privacy test helpers: closed cases of any type with the parts every case has (a comment, an
attachment, an entity it names, a decision), dated by a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from casework.cases.attachments.services import attachment_upload
from casework.cases.models import Case, Decision
from casework.cases.services import case_comment, case_create
from casework.cases.types import Found
from casework.entities.extraction import entities_record
from casework.entities.models import Entity
from casework.people.roles import DATA_PROTECTION
from casework.people.services import user_create
from tests.support.conftest import support_data  # noqa: F401 - fixture

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
# The fixed clock every test reads: cases closed relative to it, runs at it.
NOW = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def dora(db):
    """A data-protection officer."""
    return user_create(actor="system", username="dora", password="dora-pass-123", role=DATA_PROTECTION)


@pytest.fixture
def dirk(db):
    """A second data-protection officer (four eyes)."""
    return user_create(actor="system", username="dirk", password="dirk-pass-123", role=DATA_PROTECTION)


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def closed_case(case_type: str, *, closed_at: datetime, customer: str = "CUST-001", author=None) -> Case:
    """A case of `case_type` naming `customer`, with a comment, an attachment and a final
    decision whose reason quotes an address, closed (and decided) at `closed_at`."""
    case = case_create(actor="system", case_type=case_type, title="Customer jane.doe@example.com",
                       description="Jane Doe wrote from jane.doe@example.com about card 4111 1111 1111 1111.")
    if author is not None:
        case_comment(actor=author, case=case, body="Called Jane on +31 6 1234 5678.")
    attachment_upload(actor="system", case=case, upload=SimpleUploadedFile("letter.pdf", PDF),
                      received_from="jane.doe@example.com")
    entities_record(case=case, found=[Found("customer", customer, "customer_id")])
    Decision.objects.create(case=case, outcome="no_action", reason="Answered jane.doe@example.com by phone.",
                            final=True)
    Decision.objects.filter(case=case).update(decided_at=closed_at)
    Case.objects.filter(pk=case.pk).update(status="closed", closed_at=closed_at)
    case.refresh_from_db()
    return case


def entity(kind: str, value: str) -> Entity:
    return Entity.objects.get(kind=kind, value=value)
