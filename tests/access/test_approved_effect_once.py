"""An approved call acts once, even when its worker dies between the effect and the run's save
(issue 46; agents.runtime.effects). A pipeline whose one step is an "acts" tool that e-mails a
person waits for approval; a person approves; the resumed run makes the call (the e-mail reaches
the real SMTP server on 127.0.0.1) and its worker "dies" before the step is saved (WorkerKilled:
not an Exception, so nothing between the save and the worker catches it). The next worker makes
the same call again from the same saved step, and the e-mail is not sent twice: it was sent under
the approval's key. Counted, never timed."""

from __future__ import annotations

import pytest
from django.db import transaction
from pydantic import BaseModel, Field

from agents.models import AgentCall, AgentRun, RunPause
from agents.runtime import pipeline as pipeline_module
from agents.runtime.pause import pause_answer
from agents.runtime.pipeline import CallSpec, Pipeline, Stage, register_pipeline
from agents.runtime.tools import Tool
from agents.tasks import pipeline_enqueue, run_pipeline
from casework.cases.models import Case
from casework.cases.notifications.models import Notification
from casework.cases.services import case_create
from casework.outbox.models import OutboxEvent
from tests.agents.test_durable_runs import WorkerKilled, make_stale

pytestmark = pytest.mark.django_db(transaction=True)

MADE: list[str] = []  # each time the tool ran


class RemindArgs(BaseModel):
    case: str = Field(description="The case's reference.")
    subject: str = Field(description="The e-mail's subject.")


def remind_employee(args: RemindArgs) -> dict:
    """E-mail the employee a reminder and tell the subscribers (acts: it talks to a person and a
    system outside Casework)."""
    from casework.cases.notifications.services import notification_send
    from casework.outbox.services import event_record

    MADE.append(args.subject)
    case = Case.objects.get(reference=args.case)
    note = notification_send(actor="agent:reminder", kind=Notification.Kind.REQUEST, case=case,
                             email="priya@example.com", name="Priya", subject=args.subject,
                             body="Please answer the request.")
    event = event_record(type="case.assigned", case=case, data={"case": {"reference": case.reference}})
    return {"notification": note.pk, "event": event.pk}


REMIND = Tool("remind_employee", remind_employee.__doc__.strip(), RemindArgs, remind_employee, consequence="acts")
register_pipeline(Pipeline(name="test_effect_once", modes={"full": [
    Stage("remind", lambda ctx: [CallSpec("remind", tool=REMIND, input=dict(ctx.run.state["input"]))]),
]}))


def test_an_approved_call_made_again_after_its_worker_died_does_not_send_twice(alice, inbox, monkeypatch):
    MADE.clear()
    case = case_create(actor=alice, case_type="fraud_alert", title="Remind once")
    with transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_effect_once", mode="full", actor="system",
                               initial_state={"input": {"case": case.reference, "subject": "A reminder"}})
    run.refresh_from_db()
    assert run.status == AgentRun.Status.WAITING_APPROVAL and MADE == [] and len(inbox) == 0
    pause = RunPause.objects.get(run=run)

    real_save_step, deaths = pipeline_module._save_step, []

    def dies_at_the_first_save(*args, **kwargs):
        if not deaths:
            deaths.append(1)
            raise WorkerKilled("SIGKILL between the e-mail and the step's save")
        return real_save_step(*args, **kwargs)

    monkeypatch.setattr(pipeline_module, "_save_step", dies_at_the_first_save)
    with pytest.raises(WorkerKilled):  # the answer's wake-up runs the resumed run here (eager)
        pause_answer(pause=pause, actor=alice, approve=True, tool=REMIND)

    run.refresh_from_db()
    assert run.status == AgentRun.Status.RUNNING  # nobody was left to save the step
    assert MADE == ["A reminder"] and len(inbox) == 1
    assert not AgentCall.objects.filter(run=run).exists()

    make_stale(run)
    run_pipeline.delay(run.pk)  # the next worker takes the run from its saved step

    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert MADE == ["A reminder", "A reminder"]  # the call was made again ...
    assert len(inbox) == 1 and inbox[0].to == ["priya@example.com"]  # ... and acted once
    (note,) = Notification.objects.filter(case=case, kind=Notification.Kind.REQUEST)
    assert note.effect_key == f"approval-{pause.pk}/1" and note.emailed_at is not None
    (event,) = OutboxEvent.objects.filter(case=case, type="case.assigned")  # the outbox's event: once too
    call = AgentCall.objects.get(run=run, kind=AgentCall.Kind.TOOL)
    assert call.status == AgentCall.Status.OK and call.output == {"notification": note.pk, "event": event.pk}
    pause.refresh_from_db()
    assert pause.resumed_at is not None
