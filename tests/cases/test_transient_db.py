"""A database restart does not skip an SLA scan (issue 26): the scan is retried with backoff."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from audit.models import AuditEntry
from casework.cases.models import Case
from casework.cases.services import case_create
from tests.fakes.db_restart import on_postgres, terminate_other_backends

pytestmark = [pytest.mark.django_db(transaction=True), on_postgres]


def test_an_sla_scan_whose_connection_was_terminated_is_retried(alice, caplog):
    from casework.cases.notifications.tasks import cases_sla_check

    case = case_create(actor=alice, case_type="fraud_alert", title="Overdue")
    Case.objects.filter(pk=case.pk).update(due_at=timezone.now() - timedelta(hours=1))
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert terminate_other_backends() >= 1

    with caplog.at_level("WARNING", logger="casework.db_transient"):
        result = cases_sla_check.delay().get()

    # The first scan met the dead connection and was sent again; the retry recorded the breach.
    retries = [r.getMessage() for r in caplog.records if "transient database error" in r.getMessage()]
    assert len(retries) == 1 and retries[0].startswith("casework.cases.notifications.tasks.cases_sla_check: ")
    assert retries[0].endswith("(retry 1).")
    assert result == {"warned": 0, "breached": 1}
    assert Case.objects.get(pk=case.pk).sla_breached_at is not None
    assert AuditEntry.objects.filter(action="case.sla_breached", case_id=case.pk).count() == 1
