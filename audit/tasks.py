"""Periodic audit work: the sequencer's safety net (a pass whatever AUDIT_SEQUENCER says), and
signed checkpoints of the chain head (audit.checkpoint_services, every AUDIT_CHECKPOINT_CHECK_SECONDS).

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


@shared_task(ignore_result=True, soft_time_limit=120, time_limit=150)
def audit_checkpoint_publish() -> int | None:
    """Sign and publish the chain head when a checkpoint is due (audit.checkpoint_services)."""
    from audit.checkpoint_services import audit_checkpoint_publish as publish

    published = publish()
    return published.signed.checkpoint.position if published.signed else None
