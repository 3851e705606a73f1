"""Erasure requests whose worker died (issue 42): the beat task's sweep sends a request left
running with its cursor again once it has made no progress for ERASURE_STALE_AFTER_SECONDS
(the clock injected), and it ends where a run that never stopped ends; the API resumes too."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEntry
from casework.cases.models import Decision
from casework.privacy.erasure import ERASED, erasure_request
from casework.privacy.erasure_run import erasure_run
from casework.privacy.erasure_run import erasure_sweep as _sweep
from casework.privacy.models import ErasureRequest
from casework.privacy.tasks import privacy_erasure_run
from tests.privacy.conftest import NOW, closed_case, entity
from tests.privacy.test_erasure import _fail_on_update_of, _repair


def erasure_sweep(*, now):
    """The beat task's pass at `now`, sending the requests to the real task (Celery is eager)."""
    return _sweep(now=now, send=privacy_erasure_run.delay)


def _crashed(settings, dora, dirk):
    """Three support tickets of CUST-001, erased one per batch by a worker that died in the second
    batch: the request is left running with its cursor at 1, as a killed worker leaves it (no
    failure handler ran). The request is bulk (approved by dirk by hand: its task message lost)."""
    settings.ERASURE_BATCH, settings.ERASURE_FOUR_EYES_CASES = 1, 0
    cases = sorted((closed_case("support_ticket", closed_at=NOW - timedelta(days=1)) for _ in range(3)),
                   key=lambda c: c.pk)
    request = erasure_request(actor=dora, subjects=[[entity("customer", "CUST-001")]], reason="Asked.", now=NOW)
    ErasureRequest.objects.filter(pk=request.pk).update(status="approved", approved_by=dirk, approved_at=NOW)
    _fail_on_update_of(cases[1].reference)
    with pytest.raises(Exception, match="injected failure"):
        erasure_run(request_id=request.pk, now=NOW)
    _repair()
    request.refresh_from_db()
    assert (request.status, request.cursor, request.progress_at) == ("running", 1, NOW)
    return request, cases


def test_the_sweep_resumes_a_request_left_running_at_its_cursor_once_it_is_stale(
        settings, support_data, dora, dirk, django_capture_on_commit_callbacks):
    request, cases = _crashed(settings, dora, dirk)
    stale_after = timedelta(seconds=settings.ERASURE_STALE_AFTER_SECONDS)

    # Within the period it may still be working: nothing is sent.
    assert erasure_sweep(now=NOW + stale_after - timedelta(seconds=1)) == []
    with django_capture_on_commit_callbacks(execute=True):
        assert erasure_sweep(now=NOW + stale_after + timedelta(seconds=1)) == [request.reference]
    request.refresh_from_db()
    assert (request.status, request.cursor, request.batches) == ("done", 3, 3)
    assert set(request.report["cases"][ERASED]) == {c.reference for c in cases}
    assert all("Jane" not in d.reason for d in Decision.objects.filter(case__in=cases))
    resumed = AuditEntry.objects.get(action="erasure.resumed", object_id=str(request.pk))
    assert (resumed.actor, resumed.data["cursor"], resumed.data["status"]) == ("system", 1, "running")
    # Done is done: a later pass sends nothing.
    assert erasure_sweep(now=NOW + 10 * stale_after) == []


def test_a_request_sent_again_waits_a_full_period_before_the_next_wake_up(settings, support_data, dora, dirk):
    request, _ = _crashed(settings, dora, dirk)
    later = NOW + timedelta(seconds=settings.ERASURE_STALE_AFTER_SECONDS + 1)
    assert erasure_sweep(now=later) == [request.reference]  # its task is not run here (no commit)
    assert erasure_sweep(now=later + timedelta(seconds=60)) == []
    request.refresh_from_db()
    assert (request.status, request.progress_at) == ("running", later)


def test_the_api_resumes_a_request_left_running(settings, support_data, dora, dirk, alice,
                                                django_capture_on_commit_callbacks):
    request, _ = _crashed(settings, dora, dirk)
    api = APIClient()
    api.force_authenticate(alice)
    assert api.post(f"/api/erasure-requests/{request.pk}/resume/").status_code == 404  # not a DPO's
    api.force_authenticate(dora)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/erasure-requests/{request.pk}/resume/")
    assert response.status_code == 200, response.content
    request.refresh_from_db()
    assert (request.status, request.cursor) == ("done", 3)
    again = api.post(f"/api/erasure-requests/{request.pk}/resume/")
    assert again.status_code == 400 and "status" in again.json()
