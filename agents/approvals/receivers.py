"""Tell the case's people that a run waits for their approval (the shared notifications)."""

from __future__ import annotations

from django.dispatch import receiver

from agents.models import RunPause
from agents.runtime.signals import run_paused


@receiver(run_paused, dispatch_uid="approvals_notify_waiting")
def _on_run_paused(sender, pause: RunPause, **kwargs):
    if pause.kind != RunPause.Kind.APPROVAL or pause.case_id is None:
        return
    from agents.approvals.services import approval_notify

    approval_notify(pause=pause)
