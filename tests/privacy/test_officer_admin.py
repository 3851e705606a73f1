"""A data-protection officer (staff, no Django model permissions) opens the privacy admin:
legal holds (list, place), retention, entities with the subject-access action, erasure
requests; and nothing else of the admin (cases, the audit trail, users)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from casework.people.roles import DATA_PROTECTION
from casework.people.services import user_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def officer_client(client):
    officer = user_create(actor="system", username="dora", password="x-pass-1234", role=DATA_PROTECTION)
    assert officer.is_staff and not officer.is_superuser
    client.force_login(officer)
    return client


@pytest.mark.parametrize("name", ["admin:privacy_legalhold_changelist", "admin:privacy_legalhold_add",
                                  "admin:privacy_retentionpurge_changelist", "admin:entities_entity_changelist",
                                  "admin:privacy_erasurerequest_changelist", "admin:privacy_erasurerequest_add"])
def test_the_officer_opens_the_privacy_admin(officer_client, name):
    assert officer_client.get(reverse(name)).status_code == 200


@pytest.mark.parametrize("name", ["admin:cases_case_changelist", "admin:audit_auditentry_changelist",
                                  "admin:auth_user_changelist"])
def test_and_nothing_else(officer_client, name):
    assert officer_client.get(reverse(name)).status_code == 403


def test_the_admin_index_lists_only_the_privacy_models(officer_client):
    page = officer_client.get(reverse("admin:index")).content.decode()
    assert "Legal holds" in page and "Erasure requests" in page
    assert "Audit entries" not in page and "Users" not in page
