"""audit.rowsql: save(update_fields=...) and bulk_create with their statements built once;
the same rows written, auto_now and auto_now_add kept, a missing row refused, ids in list
order, receivers still run."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext

from audit.rowsql import row_get, row_update, rows_all, rows_insert
from casework.cases.models import Case, Comment
from casework.cases.services import case_create

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


def test_rows_insert_writes_every_row_in_one_statement_and_gives_each_its_own_id(case, alice):
    comments = [Comment(case=case, author=alice, body=f"note {i}") for i in range(30)]
    with CaptureQueriesContext(connection) as queries:
        assert rows_insert(comments) is comments
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["INSERT"]
    assert [c.pk for c in comments] == sorted(c.pk for c in comments)
    stored = {c.pk: c for c in Comment.objects.filter(case=case)}
    assert [stored[c.pk].body for c in comments] == [f"note {i}" for i in range(30)]
    assert all(stored[c.pk].created_at == c.created_at is not None for c in comments)
    assert all(not c._state.adding for c in comments)
    assert rows_insert([]) == []



def test_row_get_reads_the_row_and_its_select_related_ones_as_get_does(case, alice):
    comment = Comment.objects.create(case=case, author=alice, body="first")
    Comment.objects.create(case=case, author=alice, body="second")
    build = lambda: Comment.objects.select_for_update(of=("self",)).select_related("case", "author")  # noqa: E731
    with transaction.atomic():
        expected = build().get(pk=comment.pk)
        with CaptureQueriesContext(connection) as queries:
            got = row_get(("test comment", Comment), build, comment.pk)
            again = row_get(("test comment", Comment), build, comment.pk)
    assert len(queries) == 2  # one SELECT each, nothing read lazily below
    with CaptureQueriesContext(connection) as lazy:
        assert (got.pk, got.body, got.created_at, got.case.reference, got.author.username) == (
            expected.pk, expected.body, expected.created_at, expected.case.reference, expected.author.username)
        assert again.body == "first"
    assert len(lazy) == 0
    if connection.features.has_select_for_update:
        assert "FOR UPDATE" in queries[0]["sql"]


def test_row_get_refuses_what_get_refuses(case):
    build = lambda: Comment.objects.select_for_update()  # noqa: E731
    with transaction.atomic(), pytest.raises(Comment.DoesNotExist):
        row_get(("test comment lock", Comment), build, 10**9)
    with pytest.raises(ValueError, match="nothing but pk"):
        row_get(("test filtered", Comment), lambda: Comment.objects.filter(body="x"), 1)


def test_rows_all_reads_what_the_queryset_reads_each_time_it_is_called(case, alice):
    build = lambda: Comment.objects.filter(case=case).select_related("author").order_by("pk")  # noqa: E731
    assert rows_all(("test comments", case.pk), build) == []
    Comment.objects.create(case=case, author=alice, body="first")
    Comment.objects.create(case=case, author=alice, body="second")
    with CaptureQueriesContext(connection) as queries:
        got = rows_all(("test comments", case.pk), build)
        assert [(c.body, c.author.username) for c in got] == [(c.body, c.author.username) for c in build()]
    assert len(queries) == 2  # rows_all's SELECT and the comparison's; authors came with them


def test_row_get_by_a_one_to_one_relation_reads_the_row_it_names(case, alice):
    from casework.fraud.services import alert_create
    from tests.fraud.conftest import CYCLING

    alert = alert_create(actor="system", data=CYCLING)
    build = lambda: alert.__class__.objects.select_related("account")  # noqa: E731
    got = row_get(("test alert by case", alert.__class__), build, alert.case_id, by="case")
    assert (got.pk, got.account.account_id) == (alert.pk, alert.account.account_id)
    assert row_get(("test alert by case", alert.__class__), build, alert.case, by="case").pk == alert.pk
    with pytest.raises(alert.__class__.DoesNotExist):
        row_get(("test alert by case", alert.__class__), build, case.pk, by="case")  # a case with no alert


def test_values_in_reads_what_values_list_reads_for_any_number_of_keys(alice):
    from audit.rowsql import values_in

    cases = [case_create(actor=alice, case_type="fraud_alert", title=f"Case {n}") for n in range(3)]
    build = lambda: Case.objects.filter(case_type="fraud_alert").values_list("id", "title", "created_at")  # noqa: E731
    for keys in ([cases[0].pk], [cases[2].pk, cases[0].pk], [c.pk for c in cases], [cases[1].pk, 10**9]):
        expected = sorted(build().filter(id__in=keys))
        assert sorted(values_in("test cases by id", build, "id", keys)) == expected
    assert values_in("test cases by id", build, "id", []) == []
    (row,) = values_in("test cases by id", build, "id", [cases[0].pk])
    assert row[2].tzinfo is not None  # through the field's converters, as values_list
