"""A database restart does not skip an SLA scan (issue 26): the scan is retried with backoff."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.fakes.db_restart import on_postgres, terminate_other_backends

pytestmark = [pytest.mark.django_db(transaction=True), on_postgres]


def test_an_sla_scan_whose_connection_was_terminated_is_retried(alice):
    from casework.cases.notifications.tasks import cases_sla_check

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert terminate_other_backends() >= 1

    assert cases_sla_check.delay().get() == {"warned": 0, "breached": 0}
