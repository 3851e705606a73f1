"""The employee's link: it works once, expires, cannot be forged; a refused link gets a page
saying why and changes nothing, through the page and the API alike."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import signing
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from audit.models import AuditEntry
from casework.access.links import SALT, link_check, link_path, link_token
from casework.access.models import EmployeeClaim, InfoRequest
from casework.access.services import LinkRefused, claim_submit
from casework.access.states import AccessStatus, mutation_transition

pytestmark = pytest.mark.django_db


def form(org, **overrides):
    return {"claim_type": "sick_leave_cover", "colleague": org.kees.pk, "period_start": "2025-11-09",
            "period_end": "2025-11-12", "explanation": "Kees was ill.", **overrides}


def snapshot():
    return (EmployeeClaim.objects.count(), AuditEntry.objects.count(),
            list(InfoRequest.objects.values_list("answered_at", "cancelled_at")))


def test_the_link_shows_the_change_and_needs_no_login(client, asked):
    response = client.get(link_path(asked))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Please explain a change you made" in page
    assert "Jan de Vries" in page and "FinanceApp" in page and "Admin" in page
    assert response["Cache-Control"].startswith("max-age=0")


def test_it_works_once(client, org, asked, django_capture_on_commit_callbacks):
    path = link_path(asked)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(path, form(org))
    assert response.status_code == 200 and b"Thank you" in response.content
    assert len(callbacks) == 1  # the claim's validation is enqueued once the answer commits
    asked.refresh_from_db()
    assert asked.answered_at is not None and asked.claim.colleague == org.kees
    before = snapshot()

    again = client.get(path)
    assert again.status_code == 410
    assert b"You already answered" in again.content
    resubmitted = client.post(path, form(org, explanation="A different story."))
    assert resubmitted.status_code == 410
    assert snapshot() == before
    assert EmployeeClaim.objects.get().explanation == "Kees was ill."


@pytest.mark.django_db(transaction=True)
def test_a_second_submission_racing_the_first_is_refused_by_the_database(org, asked):
    """Two real transactions, each on its own connection: the first has marked the link used but
    not committed; the second reads the link as still open (READ COMMITTED) and waits on the
    first's lock of the change (both lock it, as the e-mail's acceptance does). When the first
    commits, the second's conditional UPDATE finds the request answered and updates nothing: the
    second is refused by the database."""
    import threading

    from django.db import connection, connections

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite has one writer at a time, so two transactions cannot both "
                    "pass the link's check and race for the UPDATE (DATABASE_URL=postgres://... runs it)")
    token = link_token(asked)
    first_done, release_first = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def first():
        try:
            with transaction.atomic():
                claim_submit(token=token, claim_type="other", explanation="First.")
                first_done.set()
                release_first.wait(timeout=60)  # holds its transaction (and the row lock) open
            outcome["first"] = "committed"
        except Exception as exc:  # noqa: BLE001 - reported by the assertions below
            outcome["first"] = exc
        finally:
            first_done.set()
            connections.close_all()

    def second():
        try:
            outcome["second"] = claim_submit(token=token, claim_type="other", explanation="Second.")
        except Exception as exc:  # noqa: BLE001
            outcome["second"] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first, daemon=True), threading.Thread(target=second, daemon=True)]
    threads[0].start()
    assert first_done.wait(timeout=60) and "first" not in outcome, outcome
    threads[1].start()
    # The second is past its checks and waits on the first's lock: seen by PostgreSQL itself.
    _wait_for_lock_wait(connection)
    release_first.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a submission never finished"

    assert outcome["first"] == "committed"
    refused = outcome["second"]
    assert isinstance(refused, LinkRefused), refused
    assert refused.code == "link_used" and refused.status_code == 410
    assert str(refused) == "This link was already used. Thank you for your answer."  # the UPDATE's refusal
    assert EmployeeClaim.objects.count() == 1
    assert EmployeeClaim.objects.get().explanation == "First."


def _wait_for_lock_wait(connection, deadline_seconds: float = 60) -> None:
    """Until a backend of this database waits on a lock (pg_stat_activity). The short sleep only
    spaces the polls; what the test asserts never depends on how long the wait took, and the
    deadline is a failure guard for a second submission that never blocks."""
    import time

    deadline = time.monotonic() + deadline_seconds
    with connection.cursor() as cursor:
        while True:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock' AND (query ILIKE 'UPDATE%%access_inforequest%%' "
                           "OR query ILIKE '%%access_hrmutation%%FOR UPDATE%%')")
            if cursor.fetchone()[0]:
                return
            assert time.monotonic() < deadline, "The second submission never waited on the first's lock."
            time.sleep(0.02)


def test_an_expired_link_is_refused_and_changes_nothing(client, org, asked):
    InfoRequest.objects.filter(pk=asked.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    before = snapshot()
    response = client.get(link_path(asked))
    assert response.status_code == 410
    assert b"This link has expired" in response.content
    assert client.post(link_path(asked), form(org)).status_code == 410
    assert snapshot() == before


def test_expiry_follows_the_setting(settings, asked):
    assert asked.expires_at - asked.sent_at == timedelta(days=settings.ACCESS_LINK_MAX_AGE_DAYS)
    assert link_check(link_token(asked), now=asked.expires_at - timedelta(seconds=1)).ok
    assert link_check(link_token(asked), now=asked.expires_at).state == "expired"


@pytest.mark.parametrize("make_token", [
    lambda req: link_token(req)[:-2] + ("AA" if not link_token(req).endswith("AA") else "BB"),  # tampered signature
    lambda req: signing.Signer(salt="another.salt").sign_object({"r": req.pk, "n": req.nonce}),  # another purpose
    lambda req: signing.Signer(salt=SALT).sign_object({"r": req.pk, "n": "guessed-nonce"}),  # wrong nonce
    lambda req: signing.Signer(salt=SALT).sign_object({"r": req.pk + 999, "n": req.nonce}),  # no such request
    lambda req: signing.dumps({"r": req.pk, "n": req.nonce}, salt=SALT),  # the right data, another format
    lambda req: "not-a-token",
])
def test_a_forged_link_is_refused_and_changes_nothing(client, org, asked, make_token):
    token = make_token(asked)
    before = snapshot()
    response = client.get(f"/access/respond/{token}/")
    assert response.status_code == 400
    assert b"This link is not valid" in response.content
    assert client.post(f"/access/respond/{token}/", form(org)).status_code == 400
    assert snapshot() == before


def test_a_link_for_a_replaced_request_no_longer_works(org, asked):
    old_token = link_token(asked)
    InfoRequest.objects.filter(pk=asked.pk).update(cancelled_at=timezone.now(), cancel_reason="replaced")
    assert link_check(old_token).state == "cancelled"


def test_an_incomplete_answer_is_shown_again_and_keeps_the_link_usable(client, org, asked):
    path = link_path(asked)
    response = client.post(path, form(org, colleague="", explanation=""))
    assert response.status_code == 400
    page = response.content.decode()
    assert "Name the colleague you covered for." in page and "This field is required." in page
    asked.refresh_from_db()
    assert asked.answered_at is None
    assert client.post(path, form(org)).status_code == 200


def test_naming_yourself_as_the_colleague_is_refused(org, asked):
    with pytest.raises(Exception) as exc:
        claim_submit(token=link_token(asked), claim_type="sick_leave_cover", colleague=org.priya,
                     period_start=None, period_end=None, explanation="Me.")
    assert "not yourself" in str(exc.value)
    asked.refresh_from_db()
    assert asked.answered_at is None


def test_the_api_applies_the_same_rules(org, asked):
    api = APIClient()
    token = link_token(asked)
    body = {"token": token, "claim_type": "sick_leave_cover", "colleague": "u002", "period_start": "2025-11-09",
            "period_end": "2025-11-12", "explanation": "Kees was ill."}
    forged = api.post("/api/access/answers/employee/", {**body, "token": token + "x"}, format="json")
    assert forged.status_code == 400 and forged.json()["code"] == "link_forged"
    bad = api.post("/api/access/answers/employee/", {**body, "colleague": "u999"}, format="json")
    assert bad.status_code == 400 and "colleague" in bad.json()
    ok = api.post("/api/access/answers/employee/", body, format="json")
    assert ok.status_code == 201 and ok.json()["reference"] == asked.mutation.case.reference
    used = api.post("/api/access/answers/employee/", body, format="json")
    assert used.status_code == 410 and used.json()["code"] == "link_used"
    assert EmployeeClaim.objects.count() == 1


def test_an_answer_after_the_flow_moved_on_is_refused(client, org, asked):
    mutation_transition(actor="system", mutation=asked.mutation, to=AccessStatus.MANUAL_INTERVENTION_REQUIRED,
                        reason="Taken over")
    response = client.post(link_path(asked), form(org))
    assert response.status_code == 409
    assert b"no longer waiting" in response.content
    assert EmployeeClaim.objects.count() == 0


def test_the_investigator_sends_a_new_link_and_the_old_one_stops_working(client, alice, org, asked, inbox,
                                                                         django_capture_on_commit_callbacks):
    old = link_path(asked)
    InfoRequest.objects.filter(pk=asked.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    client.force_login(alice)
    page = client.get(f"/cases/{asked.mutation.case.reference}/").content.decode()
    assert "Resend link" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/access/cases/{asked.mutation.case.reference}/requests/{asked.pk}/resend/",
                               follow=True)
    assert "A new link was sent to Priya Patel" in response.content.decode()
    fresh = InfoRequest.objects.get(mutation=asked.mutation, cancelled_at__isnull=True)
    assert fresh.pk != asked.pk and fresh.state() == "open"
    assert link_path(fresh) in inbox[-1].body and inbox[-1].to == ["priya@example.com"]
    client.logout()
    assert client.get(old).status_code == 410
    assert client.post(link_path(fresh), form(org)).status_code == 200


def test_an_answer_while_the_email_is_still_recorded_as_queued_is_taken(client, org, asked_unsent,
                                                                          django_capture_on_commit_callbacks):
    """Under `make run` the worker may not yet have recorded the mail server's acceptance when
    the employee answers: the link reached them, so the answer is taken, and the change moves to
    Awaiting User Response on that fact (the answered request), before the claim's validation."""
    mutation = asked_unsent.mutation
    mutation.refresh_from_db()
    assert mutation.status == AccessStatus.USER_REQUEST_QUEUED
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(link_path(asked_unsent), form(org))
    assert response.status_code == 200 and b"Thank you" in response.content
    assert len(callbacks) == 1  # the claim's validation
    mutation.refresh_from_db()
    assert mutation.status == AccessStatus.AWAITING_USER_RESPONSE
    moved = AuditEntry.objects.filter(action="access.status_changed").latest("id")
    assert moved.data["to"] == AccessStatus.AWAITING_USER_RESPONSE
    assert "answered through their signed link" in moved.data["reason"]


def test_a_queued_request_without_an_answer_is_not_taken_as_reaching_anyone(asked_unsent):
    """The fact is the e-mail's acceptance or the answer: a queued, unanswered request is neither."""
    from casework.access.states import ACCESS_LIFECYCLE

    asked_unsent.mutation.refresh_from_db()
    state = ACCESS_LIFECYCLE.state(AccessStatus.AWAITING_USER_RESPONSE)
    assert "does not show it" in state.fact.check(asked_unsent)
    with pytest.raises(Exception) as refused:
        mutation_transition(actor="system", mutation=asked_unsent.mutation, to=AccessStatus.AWAITING_USER_RESPONSE,
                            reason="test", fact=asked_unsent)
    assert getattr(refused.value, "code", "") == "no_fact"
