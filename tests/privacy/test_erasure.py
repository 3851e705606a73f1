"""Erasure of a data subject (issue 42.2): four eyes for bulk, a held case kept and reported,
a run stopped by a failure resumes from its cursor to the same end as one that never stopped,
a payload changed by anything but an erasure is still found, and the API and admin."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from rest_framework.test import APIClient

from audit.models import AuditEntry
from audit.services import audit_sequence, audit_verify_chain
from casework.cases.models import Case, Decision
from casework.cases.types import Found
from casework.entities.models import Entity
from casework.privacy.erasure import DUTY, ERASED, HELD, erasure_approve, erasure_request, erasure_resume
from casework.privacy.holds import legal_hold_place
from casework.privacy.models import ErasureRequest
from casework.support.models import Customer, InboundEmail, TicketMessage
from tests.audit.guard import behind_the_codes_back
from tests.privacy.conftest import NOW, closed_case, entity
from tests.privacy.subject_scenario import OSWIN, ZENOBIA, customer_everywhere, entities_of, inbound_settings


def _reload(request: ErasureRequest) -> ErasureRequest:
    return ErasureRequest.objects.get(pk=request.pk)


# --- four eyes -----------------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_a_bulk_request_waits_for_a_second_different_person(support_data, dora, dirk):
    one = closed_case("support_ticket", closed_at=NOW, customer="CUST-001")
    two = closed_case("support_ticket", closed_at=NOW, customer="CUST-002")
    entities = [entity("customer", "CUST-001"), entity("customer", "CUST-002")]
    request = erasure_request(actor=dora, subjects=[[entities[0]], [entities[1]]],
                              reason="Two customers asked, 2030-05-02.")
    request = _reload(request)
    assert (request.status, request.four_eyes, request.case_count) == ("awaiting_approval", True, 2)
    # Nothing ran: the names are still there.
    assert Customer.objects.get(customer_id="CUST-001").name == "Ana Enterprise"
    assert Case.objects.get(pk=one.pk).title == "Customer jane.doe@example.com"

    with pytest.raises(PermissionDenied, match="Four eyes"):
        erasure_approve(actor=dora, request=request)
    assert _reload(request).status == "awaiting_approval"

    erasure_approve(actor=dirk, request=request)  # runs on commit (Celery is eager)
    request = _reload(request)
    assert (request.status, request.approved_by) == ("done", dirk)
    assert set(request.report["cases"][ERASED]) == {one.reference, two.reference}
    assert not Customer.objects.filter(name__in=["Ana Enterprise", "Piet Pro"]).exists()
    assert Customer.objects.get(pk=support_data["CUST-001"].pk).name == f"[erased subject {request.pk}.1]"
    # Each subject's entities take that subject's pseudonym.
    assert [Entity.objects.get(value=f"erased:{request.reference}:{e.pk}").display for e in entities] == [
        f"[erased subject {request.pk}.1]", f"[erased subject {request.pk}.2]"]
    with pytest.raises(ValidationError):
        erasure_approve(actor=dirk, request=request)  # done: nothing to approve


def test_a_subject_in_many_cases_is_bulk_and_the_database_refuses_the_asker_as_approver(support_data, dora, settings):
    settings.ERASURE_FOUR_EYES_CASES = 1
    for _ in range(2):
        closed_case("support_ticket", closed_at=NOW, customer="CUST-003")
    request = erasure_request(actor=dora, subjects=[[entity("customer", "CUST-003")]], reason="Asked by letter.")
    assert request.four_eyes and request.status == "awaiting_approval"
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        ErasureRequest.objects.filter(pk=request.pk).update(approved_by=dora, status="approved")


def test_only_data_protection_officers_and_admins_ask(support_data, alice):
    closed_case("support_ticket", closed_at=NOW, customer="CUST-001")
    with pytest.raises(PermissionDenied):
        erasure_request(actor=alice, subjects=[[entity("customer", "CUST-001")]], reason="Because.")
    assert not ErasureRequest.objects.exists()


# --- holds -----------------------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_a_held_case_is_kept_whole_and_reported_with_why(settings, support_data, alice, dora):
    inbound_settings(settings)
    cases = customer_everywhere(ZENOBIA, investigator=alice)
    ticket = cases["support_ticket"]
    hold = legal_hold_place(actor=dora, case=ticket, reason="Litigation hold, matter 2030-17.")

    request = _reload(erasure_request(actor=dora, subjects=[entities_of(ZENOBIA)], reason="Asked on 2030-05-02."))
    assert request.status == "done", request.error
    report = request.report
    assert report["cases"][HELD] == {ticket.reference: f"legal hold #{hold.pk}"}
    assert set(report["cases"][DUTY]) == {cases["fraud_alert"].reference, cases["transaction_investigation"].reference}
    # The held ticket keeps its thread, raw e-mail and attachment; the subject's own records,
    # which it points at, are kept too and the report says so.
    assert ZENOBIA.name in TicketMessage.objects.get(ticket__case=ticket).text
    assert ZENOBIA.email in InboundEmail.objects.get(ticket__case=ticket).raw
    assert ticket.attachments.exists()
    assert Customer.objects.get(customer_id=ZENOBIA.customer_id).name == ZENOBIA.name
    kept = {k["what"]: k["why"] for k in report["kept"]}
    assert kept["support.customer: 1 rows naming the subject"] == "a legal hold on a case that names them"
    # The AML cases are pseudonymised all the same.
    reason = Decision.objects.get(case=cases["fraud_alert"], final=True).reason
    assert ZENOBIA.name not in reason and f"[erased subject {request.pk}]" in reason


# --- resume ------------------------------------------------------------------------------------

def _fail_on_update_of(reference: str):
    """A real failure in the database: any UPDATE of this case's row is refused (a trigger)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION erasure_test_fail() RETURNS trigger AS $$ BEGIN "
                "RAISE EXCEPTION 'injected failure'; END $$ LANGUAGE plpgsql")
            cursor.execute(f"CREATE TRIGGER erasure_test_fail BEFORE UPDATE ON cases_case FOR EACH ROW "
                           f"WHEN (OLD.reference = '{reference}') EXECUTE FUNCTION erasure_test_fail()")
        else:
            cursor.execute(f"CREATE TRIGGER erasure_test_fail BEFORE UPDATE ON cases_case "
                           f"WHEN OLD.reference = '{reference}' BEGIN SELECT RAISE(ABORT, 'injected failure'); END")


def _repair() -> None:
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER erasure_test_fail ON cases_case" if connection.vendor == "postgresql"
                       else "DROP TRIGGER erasure_test_fail")
        if connection.vendor == "postgresql":
            cursor.execute("DROP FUNCTION erasure_test_fail()")


def _shape(report: dict) -> dict:
    """A report without what names the request or the cases: what two equal subjects share."""
    return {"cases": {k: len(v) for k, v in report["cases"].items()}, "changed": report["changed"],
            "removed": report["removed"], "audit": report["audit"], "entities": report["entities"],
            "files": report["files"], "kept": report["kept"], "batches": report["batches"]}


@pytest.mark.django_db(transaction=True)
def test_a_run_stopped_after_its_first_batch_resumes_at_its_cursor_to_the_same_end(settings, support_data, alice,
                                                                                   dora):
    inbound_settings(settings)
    settings.ERASURE_BATCH = 1
    # One after the other, so that neither's pipelines read the other in clear (a look-alike
    # case quoted in a run's state): the two erasures then have the same work to do.
    customer_everywhere(ZENOBIA, investigator=alice)
    straight = _reload(erasure_request(actor=dora, subjects=[entities_of(ZENOBIA)], reason="Asked."))
    assert straight.status == "done" and straight.batches == 3
    stopped_cases = customer_everywhere(OSWIN, investigator=alice)

    # Oswin's cases in plan order: the ticket, the alert, the investigation. The second batch fails.
    order = sorted(stopped_cases.values(), key=lambda c: c.pk)
    _fail_on_update_of(order[1].reference)
    with pytest.raises(Exception, match="injected failure"):
        erasure_request(actor=dora, subjects=[entities_of(OSWIN)], reason="Asked.")
    stopped = ErasureRequest.objects.exclude(pk=straight.pk).get()
    assert (stopped.status, stopped.cursor, stopped.batches) == ("failed", 1, 1)
    assert "injected" not in stopped.error  # the kind of error only: a message may quote values
    failed = AuditEntry.objects.get(action="erasure.failed", object_id=str(stopped.pk))
    assert (failed.data["request"], failed.data["cursor"]) == (stopped.reference, 1)
    assert failed.data["error"] in ("ProgrammingError", "IntegrityError")  # PostgreSQL's RAISE, SQLite's ABORT
    # Batch 1 committed (the ticket is erased), batch 2 rolled back whole (the alert still names him).
    assert set(stopped.report["cases"][ERASED]) == {order[0].reference}
    assert OSWIN.name in Decision.objects.get(case=order[1], final=True).reason

    _repair()
    erasure_resume(actor=dora, request=stopped)
    stopped = _reload(stopped)
    assert (stopped.status, stopped.cursor, stopped.batches) == ("done", 3, 3)
    assert _shape(stopped.report) == _shape(straight.report)
    assert OSWIN.name not in Decision.objects.get(case=order[1], final=True).reason
    # Run again: done is done.
    erasure_resume_refused = pytest.raises(ValidationError)
    with erasure_resume_refused:
        erasure_resume(actor=dora, request=stopped)


# --- the audit trail -------------------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_after_an_erasure_a_payload_changed_any_other_way_is_still_found(support_data, dora):
    case = closed_case("support_ticket", closed_at=NOW - timedelta(days=1), customer="CUST-002")
    request = _reload(erasure_request(actor=dora, subjects=[[entity("customer", "CUST-002")]], reason="Asked."))
    assert request.status == "done"
    audit_sequence()
    assert audit_verify_chain().intact
    assert AuditEntry.objects.filter(tombstone=request.reference).exists()
    victim = AuditEntry.objects.filter(case_id=case.pk, tombstone="").exclude(data={}).first()
    with behind_the_codes_back() as cursor:
        cursor.execute("UPDATE audit_auditentry SET data = %s WHERE id = %s", ['{"note": "rewritten"}', victim.pk])
    check = audit_verify_chain()
    assert not check.intact and check.broken.pk == victim.pk


# --- API and admin --------------------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_the_api_asks_approves_and_shows_the_report(support_data, dora, dirk, alice):
    closed_case("support_ticket", closed_at=NOW, customer="CUST-001")
    closed_case("support_ticket", closed_at=NOW, customer="CUST-002")
    ids = [[entity("customer", "CUST-001").pk], [entity("customer", "CUST-002").pk]]
    as_dora, as_dirk, as_alice = APIClient(), APIClient(), APIClient()
    as_dora.force_authenticate(dora)
    as_dirk.force_authenticate(dirk)
    as_alice.force_authenticate(alice)

    assert as_alice.post("/api/erasure-requests/", {"subjects": ids, "reason": "x"}, format="json").status_code == 403
    bad = as_dora.post("/api/erasure-requests/", {"subjects": [[999999]], "reason": "Asked."}, format="json")
    assert bad.status_code == 400 and "subjects" in bad.json()
    assert as_dora.post("/api/erasure-requests/", {"subjects": ids}, format="json").json().keys() >= {"reason"}

    made = as_dora.post("/api/erasure-requests/", {"subjects": ids, "reason": "Two letters."}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["status"], body["four_eyes"], body["reference"]) == ("awaiting_approval", True, f"ERA-{body['id']}")
    url = f"/api/erasure-requests/{body['id']}/"
    assert as_alice.get(url).status_code == 404 and as_alice.post(url + "approve/").status_code == 404
    assert as_dora.post(url + "approve/").status_code == 403  # four eyes
    approved = as_dirk.post(url + "approve/")
    assert approved.status_code == 200 and approved.json()["approved_by"] == "dirk"
    shown = as_dora.get(url).json()
    assert shown["status"] == "done" and shown["report"]["changed"]["support.customer"]["rows"] == 2
    assert as_dirk.post(url + "approve/").status_code == 400
    assert AuditEntry.objects.filter(action="erasure.completed", object_id=str(body["id"])).exists()


def test_the_schema_documents_the_erasure_operations(client):
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    assert {"post"} <= set(paths["/api/erasure-requests/"])
    assert {"get"} <= set(paths["/api/erasure-requests/{id}/"])
    assert {"post"} <= set(paths["/api/erasure-requests/{id}/approve/"])
    assert {"post"} <= set(paths["/api/erasure-requests/{id}/resume/"])


@pytest.mark.django_db(transaction=True)
def test_the_admin_asks_and_shows_the_report(support_data, dora, admin_user, client):
    closed_case("support_ticket", closed_at=NOW, customer="CUST-001")
    client.force_login(admin_user)
    customer = entity("customer", "CUST-001")
    response = client.post("/admin/privacy/erasurerequest/add/", {"subjects_text": f"{customer.pk}",
                                                                  "reason": "Asked by phone."})
    assert response.status_code == 302, response.content.decode()[:2000]
    request = ErasureRequest.objects.get()
    assert request.status == "done" and request.requested_by == admin_user
    page = client.get(f"/admin/privacy/erasurerequest/{request.pk}/change/").content.decode()
    assert "support.customer" in page and ERASED in page
    client.force_login(dora)
    assert client.get("/admin/privacy/erasurerequest/").status_code in (200, 302)
    assert Entity.objects.get(pk=customer.pk).value == f"erased:{request.reference}:{customer.pk}"


# --- finding the subject -------------------------------------------------------------------------

def _ticket_writing(customer_id: str, account: str, number: int) -> None:
    """A ticket of this customer whose own message names `account` (its entities as the
    ticket's extraction records them: casework/support/entities.py)."""
    from casework.cases.services import case_create
    from casework.entities.extraction import entities_record
    from casework.support.models import Customer, Ticket

    case = case_create(actor="system", case_type="support_ticket", title="Refund")
    Ticket.objects.create(case=case, ticket_id=f"TKT-{number:08d}", customer=Customer.objects.get(customer_id=customer_id))
    entities_record(case=case, found=[Found("customer", customer_id, "customer_id"), Found("account", account, "message")])


def test_a_customers_own_account_is_found_from_what_they_wrote(support_data):
    """The request names the customer only: the account they wrote in their own message joins
    the subject (and, through it, the cards on it); one another customer wrote about does not."""
    from casework.privacy.erasure_run import subject_identifiers

    _ticket_writing("CUST-001", "ACC-123456", 1)
    _ticket_writing("CUST-002", "ACC-654321", 2)
    entities, ids = subject_identifiers([entity("customer", "CUST-001").pk], pseudonym="[erased subject 1]")
    assert entity("account", "ACC-123456").pk in entities
    assert entity("account", "ACC-654321").pk not in entities
    assert "ACC-123456" in ids.strong
