"""casework.row_update: save(update_fields=...) with a statement built once; the same row
written, auto_now kept, a missing row refused, receivers still run."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext

from casework.cases.models import Case
from casework.cases.services import case_create
from casework.row_update import row_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="A case")


def test_it_writes_the_fields_and_updated_at_in_one_update(case):
    before = case.updated_at
    case.status, case.title = "in_progress", "not written"
    with CaptureQueriesContext(connection) as queries:
        row_update(case, ["status", "updated_at"])
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["UPDATE"]
    stored = Case.objects.get(pk=case.pk)
    assert stored.status == "in_progress" and stored.title == "A case"
    assert stored.updated_at == case.updated_at > before


def test_a_row_that_is_gone_is_refused_as_save_refuses_it(case):
    Case.objects.filter(pk=case.pk).update(status="new")
    case.pk = case.pk + 10_000
    with pytest.raises(DatabaseError, match="did not affect any rows"):
        row_update(case, ["status"])


def test_a_model_with_a_save_receiver_is_saved_through_save_so_the_receiver_runs(case):
    seen = []

    def receiver(sender, instance, update_fields, **kwargs):
        seen.append((instance.pk, sorted(update_fields)))

    post_save.connect(receiver, sender=Case, weak=False)
    try:
        case.status = "in_progress"
        row_update(case, ["status", "updated_at"])
    finally:
        post_save.disconnect(receiver, sender=Case)
    assert seen == [(case.pk, ["status", "updated_at"])]
    assert Case.objects.get(pk=case.pk).status == "in_progress"
