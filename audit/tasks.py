"""The audit sequencer's safety net: a periodic pass, whatever AUDIT_SEQUENCER says.

Entries committed by a process that stopped before its sequencer ran (or any process when
AUDIT_SEQUENCER=off) are linked by this task, scheduled every
AUDIT_SEQUENCE_INTERVAL_SECONDS by Celery beat.
"""

from __future__ import annotations

from celery import shared_task


@shared_task(ignore_result=True, soft_time_limit=120, time_limit=150)
def audit_sequence_pending() -> int:
    from audit.services import audit_sequence

    return audit_sequence()
