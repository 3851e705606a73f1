"""Admins set a customer's VIP flag and edit KB articles; both go through the services."""

from __future__ import annotations

import pytest

from audit.models import AuditEntry
from casework.support.models import Customer, KBArticle
from casework.support.search import kb_search

pytestmark = pytest.mark.django_db


def test_an_admin_sets_the_vip_flag(client, admin_user, support_data):
    client.force_login(admin_user)
    customer = Customer.objects.get(customer_id="CUST-003")
    response = client.post(f"/admin/support/customer/{customer.pk}/change/", {
        "customer_id": "CUST-003", "name": customer.name, "email": "", "plan": "free", "tenure_months": 2,
        "seats": 1, "region": "eu-south", "vip": "on"})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Customer.objects.get(pk=customer.pk).vip is True
    assert AuditEntry.objects.filter(action="support.customer_updated", actor="root").exists()


def test_an_admin_edits_an_article_and_search_sees_it(client, admin_user, support_data):
    client.force_login(admin_user)
    article = KBArticle.objects.get(article_id="kb_020")
    response = client.post(f"/admin/support/kbarticle/{article.pk}/change/", {
        "article_id": "kb_020", "title": "Renaming your workspace", "category": "general",
        "body": "Owners rename the workspace under Settings > Workspace."})
    assert response.status_code == 302
    assert [h.article_id for h in kb_search("rename workspace", category="general")] == ["kb_020"]
    assert AuditEntry.objects.filter(action="support.kb_article_updated").exists()
