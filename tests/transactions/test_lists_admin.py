"""Allow and deny lists in the Django admin: the same services as the API, so the same checks
(a form error, never a 500) and the same audit."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEntry
from casework.transactions.lists.models import ListEntry, ValueList

pytestmark = pytest.mark.django_db


def test_lists_and_entries_are_made_and_removed_in_the_admin_and_audited(client, admin_user):
    client.force_login(admin_user)
    bad = client.post("/admin/transactions/valuelist/add/", {"name": "-deny", "kind": "deny", "field": "ip"})
    assert bad.status_code == 200 and "Use lower-case letters" in bad.content.decode()
    made = client.post("/admin/transactions/valuelist/add/", {"name": "Deny-IPs", "kind": "deny", "field": "ip",
                                                              "description": ""})
    assert made.status_code == 302, made.content.decode()[:2000]
    deny = ValueList.objects.get(name="deny-ips")
    form = {"value_list": deny.pk, "value": "2001:0db8::0001", "note": "proxy"}
    past = client.post("/admin/transactions/listentry/add/", {**form, "expires_at_0": "2020-01-01",
                                                              "expires_at_1": "00:00:00"})
    assert past.status_code == 200 and "The expiry must be in the future." in past.content.decode()
    not_ip = client.post("/admin/transactions/listentry/add/", {**form, "value": "not-an-ip"})
    assert not_ip.status_code == 200 and "is not an IP address" in not_ip.content.decode()
    later = timezone.now() + timedelta(days=3)
    added = client.post("/admin/transactions/listentry/add/", {
        **form, "expires_at_0": later.strftime("%Y-%m-%d"), "expires_at_1": later.strftime("%H:%M:%S")})
    assert added.status_code == 302, added.content.decode()[:2000]
    entry = ListEntry.objects.get()
    assert entry.value == "2001:db8::1" and entry.added_by == admin_user and entry.expires_at is not None
    removed = client.post("/admin/transactions/listentry/", {"action": "remove_selected",
                                                             "_selected_action": [entry.pk]})
    assert removed.status_code == 302 and not ListEntry.objects.exists()
    assert list(AuditEntry.objects.filter(action__startswith="txn.list").order_by("pk")
                .values_list("action", "actor")) == [("txn.list_created", "root"), ("txn.list_entry_added", "root"),
                                                     ("txn.list_entry_removed", "root")]
